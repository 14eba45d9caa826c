// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_read_ahead.cpp: a compressed log decoded on a thread of its own
// (log/read/read_ahead.h): the same bytes, the same end (whole, cut in the middle of a frame,
// corrupt data after the bytes before it) and the same byte counts as the source read on the
// reader's thread (for corrupt data, as far as room to decode into decides alike), for plain, gzip
// and zstd inputs and rings of several shapes; a reader that stops early with the ring full, or
// while the thread waits on a FIFO whose writer stays open and silent, is never held (hang guards
// of a minute); a FIFO's frames are given as they come. Not here: LogInput's formats and messages
// (test_log_input.cpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "log/read/compression.h"
#include "log/read/input.h"
#include "log/read/input_source.h"
#include "log/read/read_ahead.h"
#include "tests/unit/catch.h"
#include "tests/unit/log_read_test_util.h"
#include "tests/unit/log_test_util.h"

using namespace cudapool::log;
using logtest::TempDir;
using namespace logtest::compressed;

namespace {

// Runs fn on a thread of its own and waits for it a generous minute: a hang guard, not a timing.
// A hang ends the test program at once (what fn uses would be gone under it otherwise).
template <class Fn>
void returns(const char* what, Fn fn) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> returned = done->get_future();
  std::thread([fn, done]() mutable {
    fn();
    done->set_value();
  }).detach();
  if (returned.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    std::fprintf(stderr, "test_log_read_ahead: %s did not return within a minute: a hang\n", what);
    std::fflush(stderr);
    std::_Exit(1);
  }
}

// A source opened as LogInput opens one: its first bytes tell the format.
std::unique_ptr<InputSource> open_source(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  auto source = std::make_unique<InputSource>(fd, true, path);
  std::string_view first;
  REQUIRE(source->read_first(&first));
  source->use(sniff(first));
  return source;
}

// A corrupt data error without the byte numbers of where it was found.
std::string without_bytes(const std::string& error) {
  static const std::regex where("found (at byte [0-9]+|in bytes [0-9]+ to [0-9]+)");
  return std::regex_replace(error, where, "found at N");
}

struct Outcome {
  std::string bytes, error, ended_early;
  std::uint64_t read = 0;  // bytes_read() at the end
};

// On the reader's thread, as without a thread, in requests of 100 KiB.
Outcome read_here(const std::string& path) {
  const auto source = open_source(path);
  Outcome o;
  std::vector<char> buffer(100 << 10);
  while (const std::size_t n = source->fill(buffer.data(), buffer.size())) {
    o.bytes.append(buffer.data(), n);
  }
  o.error = source->error();
  o.ended_early = source->ended_early();
  o.read = source->bytes_read();
  return o;
}

Outcome read_ahead(const std::string& path, bool whole, std::size_t chunks, std::size_t bytes) {
  const auto source = open_source(path);
  Outcome o;
  {
    ReadAhead ahead(*source, whole, chunks, bytes);
    ReadAhead::Chunk chunk;
    std::uint64_t last_read = 0;
    while (ahead.next(&chunk)) {
      CHECK(chunk.size > 0);
      CHECK(chunk.size <= bytes);
      CHECK(chunk.read >= last_read);
      last_read = chunk.read;
      o.bytes.append(chunk.data, chunk.size);
    }
    CHECK(ahead.failure().empty());
    CHECK_FALSE(ahead.next(&chunk));  // the end, for good
  }
  o.error = source->error();
  o.ended_early = source->ended_early();
  o.read = source->bytes_read();
  return o;
}

}  // namespace

TEST_CASE("read ahead: the same bytes and the same end as reading on the reader's thread") {
  TempDir dir;
  const std::string text = sample_log(20000);  // about 3.5 MiB
  const std::string z = zstd(text), g = gzip(text);
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"plain", text},
      {"log.gz", g},
      {"log.zst", z},
      {"frames.zst", zstd(text.substr(0, 123457)) + zstd(text.substr(123457))},
      {"cut.zst", z.substr(0, z.size() / 3)},
      {"cut.gz", g.substr(0, g.size() - 1)},
      {"empty.zst", "\x28\xb5\x2f\xfd"},
  };
  for (const std::size_t at : {z.size() / 2, z.size() - 3}) {
    std::string bad = z;
    bad[at] = static_cast<char>(bad[at] ^ 0x5a);
    inputs.emplace_back("bad" + std::to_string(at) + ".zst", bad);
  }
  std::string bad = g;
  bad[g.size() / 2] = static_cast<char>(bad[g.size() / 2] ^ 0x5a);
  inputs.emplace_back("bad.gz", bad);
  inputs.emplace_back("trailing.gz", g + "trailing text\n");

  const struct {
    bool whole;
    std::size_t chunks, bytes;
  } rings[] = {{true, ReadAhead::kChunks, ReadAhead::kChunkBytes},
               {true, 2, 1000},
               {false, 3, 4096},
               {true, 4, 777}};
  for (const auto& [name, bytes] : inputs) {
    write(dir / name, bytes);
    const Outcome here = read_here(dir / name);
    for (const auto& ring : rings) {
      INFO(name << ": " << ring.chunks << " chunks of " << ring.bytes << " bytes"
                << (ring.whole ? ", filled whole" : ""));
      const Outcome ahead = read_ahead(dir / name, ring.whole, ring.chunks, ring.bytes);
      CHECK(ahead.ended_early == here.ended_early);
      if (here.error.empty()) {
        CHECK(ahead.error.empty());
        CHECK(ahead.bytes.size() == here.bytes.size());
        CHECK(ahead.bytes == here.bytes);
        CHECK(ahead.read == here.read);
      } else {
        // How far the decoder gets before it finds the damage, and so the bytes it names, depend
        // on the room it is given to decode into (a request's, a chunk's): the same bytes up to
        // the shorter, the same error but for its byte numbers.
        const std::size_t n = std::min(ahead.bytes.size(), here.bytes.size());
        CHECK(ahead.bytes.compare(0, n, here.bytes, 0, n) == 0);
        CHECK(without_bytes(ahead.error) == without_bytes(here.error));
      }
    }
    // What reading here gives, for the inputs of known shape.
    if (name == "plain" || name == "log.gz" || name == "log.zst" || name == "frames.zst") {
      CHECK(here.bytes == text);
      CHECK(here.error.empty());
      CHECK(here.ended_early.empty());
      CHECK(here.read == bytes.size());
    } else if (name.rfind("cut", 0) == 0 || name == "empty.zst") {
      CHECK(here.error.empty());
      CHECK(here.ended_early.find("ends in the middle of a frame") != std::string::npos);
    } else {
      CHECK(here.error.find(": the log cannot be read past it") != std::string::npos);
    }
  }
}

TEST_CASE("log input: the decoded bytes counted are those read, not those decoded ahead") {
  TempDir dir;
  const std::string text = sample_log(30000);  // over 1 MiB: several chunks
  write(dir / "log.zst", zstd(text));
  LogInput input;
  std::string error;
  REQUIRE(input.open(dir / "log.zst", &error));
  std::string got(1000, '\0');
  std::uint64_t taken = 0;
  for (const std::size_t n : {std::size_t{1000}, std::size_t{1}, std::size_t{3} << 20}) {
    got.resize(n);
    input.stream().read(got.data(), static_cast<std::streamsize>(n));
    REQUIRE(static_cast<std::size_t>(input.stream().gcount()) == n);
    CHECK(text.compare(taken, n, got) == 0);
    taken += n;
    CHECK(input.bytes_decoded() == taken);
  }
}

TEST_CASE("read ahead: a reader that stops with the ring full is not held") {
  TempDir dir;
  write(dir / "log.zst", zstd(sample_log(30000)));  // about 5 MiB decoded
  for (const bool take_one : {false, true}) {
    INFO((take_one ? "one chunk taken" : "no chunk taken"));
    const auto source = open_source(dir / "log.zst");
    auto ahead = std::make_unique<ReadAhead>(*source, true, 4, 64 << 10);
    ReadAhead::Chunk chunk;
    if (take_one) REQUIRE(ahead->next(&chunk));
    // The thread fills every free chunk, then waits for one to be given back.
    const std::size_t full = take_one ? 3 : 4;
    returns("filling the ring", [&] {
      while (ahead->ready() < full) std::this_thread::yield();
    });
    CHECK(ahead->ready() == full);
    returns("ReadAhead's destructor with the ring full", [&] { ahead.reset(); });
    CHECK(ahead == nullptr);
  }
}

TEST_CASE("log input: a FIFO's frames are read as they come; stopping never waits on it") {
  TempDir dir;
  const std::string fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // The writer stays open throughout (O_RDWR: opening does not wait for a reader).
  const int writer = ::open(fifo.c_str(), O_RDWR | O_CLOEXEC);
  REQUIRE(writer >= 0);
  const std::string first = sample_log(300), second = sample_log(200).substr(100);
  auto put = [&](const std::string& bytes) {  // well within a pipe's 64 KiB
    REQUIRE(bytes.size() < 60000);
    REQUIRE(::write(writer, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()));
  };
  put(zstd(first));
  auto input = std::make_unique<LogInput>();
  std::string error;
  REQUIRE(input->open(fifo, &error));
  CHECK(input->compression() == Compression::kZstd);
  // Each frame's bytes come while the writer has written nothing after it.
  std::string got(first.size(), '\0');
  returns("reading the first frame",
          [&] { input->stream().read(got.data(), static_cast<std::streamsize>(got.size())); });
  CHECK(got == first);
  put(zstd(second));
  got.assign(second.size(), '\0');
  returns("reading the second frame",
          [&] { input->stream().read(got.data(), static_cast<std::streamsize>(got.size())); });
  CHECK(got == second);
  CHECK(input->bytes_decoded() == first.size() + second.size());
  // The thread now waits for more in the FIFO, whose writer stays open and silent.
  returns("LogInput's destructor while its thread waits on the FIFO", [&] { input.reset(); });
  CHECK(input == nullptr);
  ::close(writer);
}
