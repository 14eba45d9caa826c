// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/input_fuzz.cpp: the libFuzzer target for the reading side of the log (log/read/):
// any bytes are a file a tool is given (gzip, zstd, plain or anything else, told by its first
// bytes), opened by LogInput and read to its end with requests of two sizes (in place, and
// through the get area) as the tools read it. None may crash, hang or leak; at most kCap plain
// bytes are read of one input (a small compressed file may stand for gigabytes of text). And
// every promise must hold: an input that cannot be opened says why; a plain one reads as itself
// and ends whole; a compressed one ends in one way only (whole, cut in the middle of a frame, or
// corrupt data), said in the documented words with its format and a byte; the decoded bytes
// counted are those given. A broken promise aborts with the reason (libFuzzer keeps the input).
// Not a unit test (tests/unit/test_log_input.cpp); run by tests/fuzz/run.sh.
// fuzz-links: cudapool_log_read cudapool_config
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "log/read/compression.h"
#include "log/read/input.h"

namespace {

constexpr std::size_t kCap = std::size_t{2} << 20;

void require(bool ok, const char* what, const std::string& detail = "") {
  if (!ok) {
    std::fprintf(stderr, "input_fuzz: broken promise: %s %s\n", what, detail.c_str());
    std::abort();
  }
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("input_fuzz", MFD_CLOEXEC);
  require(fd >= 0, "memfd_create");
  for (std::size_t done = 0; done < size;) {
    const ssize_t n = write(fd, data + done, size - done);
    require(n > 0, "write");
    done += static_cast<std::size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  const cudapool::log::CompressionFormat* format = cudapool::log::sniff(bytes);
  {
    cudapool::log::InputOptions options;
    options.name = "LOG";
    cudapool::log::LogInput input;
    std::string error;
    if (!input.open(path, &error, options)) {
      require(format != nullptr && !format->read, "refused, and not a refused format", error);
      require(starts_with(error, "LOG is compressed with " + std::string(format->name)), "words",
              error);
    } else {
      require(format == nullptr || format->read, "a refused format opened");
      std::string got;
      std::vector<char> buffer(std::size_t{128} << 10);  // over log/read's in-place size
      std::istream& in = input.stream();
      for (int i = 0; in && got.size() < kCap; ++i) {
        const std::size_t want = i % 2 == 0 ? 100 : buffer.size();  // get area, then in place
        in.read(buffer.data(), static_cast<std::streamsize>(want));
        got.append(buffer.data(), static_cast<std::size_t>(in.gcount()));
      }
      require(input.bytes_decoded() == got.size(), "decoded bytes counted");
      const std::string& bad = input.error();
      const std::string& cut = input.ended_early();
      if (format == nullptr) {
        require(got == bytes, "plain input read as itself");
        require(bad.empty() && cut.empty(), "plain input ends whole", bad + cut);
      } else if (got.size() < kCap) {
        const std::string name(format->name);
        require(bad.empty() || cut.empty(), "one ending", bad + " | " + cut);
        require(bad.empty() || starts_with(bad, "LOG: corrupt " + name + " data, found "),
                "corrupt words", bad);
        require(cut.empty() || starts_with(cut, "LOG: the " + name +
                                                    " data ends in the middle of a frame, at byte "),
                "cut words", cut);
      }
    }
  }
  close(fd);
  return 0;
}
