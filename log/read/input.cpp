// SPDX-License-Identifier: Apache-2.0
// log/read/input.cpp: see input.h. The std::streambuf under LogInput::stream(), over an
// InputSource (input_source.h: read(2), decoding). A compressed input is read ahead on a thread
// of its own (read_ahead.h): its chunks are the get area in turn, so that decoding and parsing
// overlap. A plain one is read on the reader's thread, a large request (the line reader's 1 MiB)
// filled in place, so that its bytes are copied once, as std::ifstream does (a thread gains
// nothing there: docs/benchmarks.md, "Reading on a second thread").
#include "log/read/input.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <streambuf>
#include <vector>

#include "log/read/input_source.h"
#include "log/read/progress.h"
#include "log/read/read_ahead.h"

namespace cudapool::log {

namespace {

constexpr std::size_t kOutBytes = std::size_t{256} << 10;  // the get area for small requests
constexpr std::size_t kDirect = std::size_t{64} << 10;     // a request this large: in place

}  // namespace

class LogInput::Buffer final : public std::streambuf {
 public:
  Buffer(int fd, bool own, const std::string& name) : source_(fd, own, name), name_(name) {}
  ~Buffer() override {
    ahead_.reset();  // stops and joins the thread, which uses source_
    progress_.clear();
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  bool read_first(std::string_view* first) {
    const bool ok = source_.read_first(first);
    read_ = source_.bytes_read();
    if (!ok) error_ = source_.error();
    return ok;
  }

  // regular: the input is a regular file (read_ahead.h: chunks filled whole).
  void use(const CompressionFormat* format, std::uint64_t total, bool regular, bool progress) {
    source_.use(format);
    total_ = total;
    if (format != nullptr) {
      try {
        ahead_ = std::make_unique<ReadAhead>(source_, regular);
      } catch (const std::exception&) {  // no thread to be had: decoded here, as it is read
      }
    }
    progress_.start(progress);
  }

  // The plain bytes the reader took (those given, less what is left of the get area).
  std::uint64_t taken() const { return decoded_ - static_cast<std::uint64_t>(egptr() - gptr()); }

  std::uint64_t read_ = 0;     // bytes read from the descriptor, for the bytes given
  std::uint64_t decoded_ = 0;  // bytes given to the get area or the reader
  std::string error_, ended_early_;

 protected:
  // Never throw (the stream would only say it failed): a failure is the end, with error_.
  int_type underflow() override {
    try {
      return next_bytes();
    } catch (const std::exception& e) {
      failed(e);
      return traits_type::eof();
    }
  }

  std::streamsize xsgetn(char* s, std::streamsize n) override {
    try {
      return get(s, n);
    } catch (const std::exception& e) {
      failed(e);
      return 0;
    }
  }

 private:
  int_type next_bytes() {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (ahead_ != nullptr) {
      ReadAhead::Chunk chunk;
      if (done_ || !ahead_->next(&chunk)) {
        finish();
        return traits_type::eof();
      }
      char* data = const_cast<char*>(chunk.data);  // read only, through the get area
      setg(data, data, data + chunk.size);
      given(data, chunk.size, chunk.read);
      return traits_type::to_int_type(*gptr());
    }
    if (out_.empty()) out_.resize(kOutBytes);
    const std::size_t n = fill(out_.data(), out_.size());
    if (n == 0) return traits_type::eof();
    setg(out_.data(), out_.data(), out_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

  std::streamsize get(char* s, std::streamsize n) {
    std::streamsize got = 0;
    while (got < n) {
      const std::streamsize buffered = egptr() - gptr();
      if (buffered > 0) {
        const std::streamsize k = std::min(buffered, n - got);
        std::memcpy(s + got, gptr(), static_cast<std::size_t>(k));
        gbump(static_cast<int>(k));
        got += k;
        continue;
      }
      const auto want = static_cast<std::size_t>(n - got);
      if (want >= kDirect && ahead_ == nullptr) {
        const std::size_t k = fill(s + got, want);
        if (k == 0) break;
        got += static_cast<std::streamsize>(k);
      } else if (traits_type::eq_int_type(next_bytes(), traits_type::eof())) {
        break;
      }
    }
    return got;
  }

  void failed(const std::exception& e) {
    if (done_ && !error_.empty()) return;
    ahead_.reset();  // the source is this thread's again
    finish();
    if (error_.empty()) error_ = cannot_read(name_, e.what());
    setg(nullptr, nullptr, nullptr);
  }

  // On the reader's thread: up to cap plain bytes into dst; 0 at the end (for good).
  std::size_t fill(char* dst, std::size_t cap) {
    const std::size_t n = done_ ? 0 : source_.fill(dst, cap);
    if (n == 0) {
      finish();
      return 0;
    }
    given(dst, n, source_.bytes_read());
    return n;
  }

  // n bytes at data given to the reader, read bytes of the input read for them.
  void given(const char* data, std::size_t n, std::uint64_t read) {
    read_ = read;
    decoded_ += n;
    if (progress_.on()) {
      events_ += static_cast<std::uint64_t>(std::count(data, data + n, '\n'));
      progress_.update({name_, read_, total_, decoded_, source_.format() != nullptr, events_});
    }
  }

  // The end: what the source says of it (the thread, if any, is done with the source now).
  void finish() {
    if (done_) return;
    done_ = true;
    read_ = source_.bytes_read();
    error_ = source_.error();
    ended_early_ = source_.ended_early();
    if (error_.empty() && ahead_ != nullptr && !ahead_->failure().empty()) {
      error_ = cannot_read(name_, ahead_->failure());
    }
    progress_.clear();
  }

  InputSource source_;
  std::unique_ptr<ReadAhead> ahead_;  // reads source_ on its thread (a compressed input)
  const std::string name_;
  std::vector<char> out_;  // the get area, for requests below kDirect (no thread)
  bool done_ = false;
  std::uint64_t total_ = 0;   // the input's size, 0 when unknown
  std::uint64_t events_ = 0;  // newlines given, counted while the progress line is drawn
  Progress progress_;
};

LogInput::LogInput() : stream_(nullptr) {}
LogInput::~LogInput() = default;

std::string cannot_read(const std::string& name, const std::string& why) {
  return "cannot read " + name + ": " + why;
}

bool LogInput::check(const std::string& path, bool* regular, std::string* error,
                     const std::string& name) {
  *regular = false;
  if (path == "-") return true;
  const std::string& shown = name.empty() ? path : name;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *error = cannot_read(shown, std::strerror(errno));
    return false;
  }
  if (S_ISDIR(st.st_mode)) {
    *error = shown + " is a directory, not a log";
    return false;
  }
  *regular = S_ISREG(st.st_mode);
  return true;
}

bool LogInput::open(const std::string& path, std::string* error, const InputOptions& options) {
  const bool standard_input = path == "-";
  name_ = !options.name.empty() ? options.name : standard_input ? "<stdin>" : path;
  int fd = 0;
  if (!standard_input) {
    bool regular_path = false;
    if (!check(path, &regular_path, error, name_)) return false;
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *error = cannot_read(name_, std::strerror(errno));
      return false;
    }
  }
  buffer_ = std::make_unique<Buffer>(fd, !standard_input, name_);
  std::uint64_t total = 0;  // a regular file's size from where it is read
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (regular) {
    const off_t at = ::lseek(fd, 0, SEEK_CUR);
    if (at >= 0 && at <= st.st_size) total = static_cast<std::uint64_t>(st.st_size - at);
  }
  std::string_view first;
  if (!buffer_->read_first(&first)) {
    *error = buffer_->error_;
    return false;
  }
  const CompressionFormat* format = sniff(first);
  if (format != nullptr && !format->read) {
    // Stdin (or what the caller calls so): through the decompressor; a file: decompressed first.
    const std::string how = name_ == "<stdin>"
                                ? std::string(format->decompressor) + " FILE | ... -"
                                : std::string(format->decompressor) + " " + name_ + " > LOG";
    *error = name_ + " is compressed with " + std::string(format->name) +
             ", which the readers of the log do not decode (they read plain, gzip and zstd "
             "logs): decompress it first (" +
             how + ")";
    return false;
  }
  compression_ = format != nullptr ? format->id : Compression::kNone;
  buffer_->use(format, total, regular, options.progress);
  stream_.rdbuf(buffer_.get());
  return true;
}

const std::string& LogInput::error() const {
  static const std::string kNone;
  return buffer_ ? buffer_->error_ : kNone;
}

const std::string& LogInput::ended_early() const {
  static const std::string kNone;
  return buffer_ ? buffer_->ended_early_ : kNone;
}

std::uint64_t LogInput::bytes_read() const {
  return buffer_ ? buffer_->read_ : 0;
}
std::uint64_t LogInput::bytes_decoded() const {
  return buffer_ ? buffer_->taken() : 0;
}

}  // namespace cudapool::log
