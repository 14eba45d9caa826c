// log/read/input.cpp: see input.h. The std::streambuf under LogInput::stream(): reads the
// descriptor with read(2) (a pipe or a non-blocking descriptor waits in poll(2)), decodes through
// a Decoder (decoder.h) when the first bytes named a compressed format, and fills a large request
// (the line reader's 1 MiB) in place, so that plain bytes are copied once, as std::ifstream does.
#include "log/read/input.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <streambuf>
#include <vector>

#include "log/read/decoder.h"
#include "log/read/progress.h"

namespace cudapool::log {

namespace {

constexpr std::size_t kInBytes = std::size_t{256} << 10;   // compressed bytes read at a time
constexpr std::size_t kOutBytes = std::size_t{256} << 10;  // the get area for small requests
constexpr std::size_t kDirect = std::size_t{64} << 10;     // a request this large: in place
// Compressed bytes handed to the decoder at a time: corrupt data is found where the decoder stops
// (a zstd block is checked whole), within this many bytes of its end.
constexpr std::size_t kPiece = std::size_t{32} << 10;

}  // namespace

class LogInput::Buffer final : public std::streambuf {
 public:
  Buffer(int fd, bool own, std::string name) : fd_(fd), own_(own), name_(std::move(name)) {}
  ~Buffer() override {
    progress_.clear();
    if (own_) ::close(fd_);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // The first bytes (up to kSniffBytes, fewer at the end of the input), kept to be read again.
  // false on a read error (error_).
  bool read_first(std::string_view* first) {
    in_.resize(kSniffBytes);
    while (in_len_ < kSniffBytes && !input_end_) {
      in_len_ += read_some(in_.data() + in_len_, kSniffBytes - in_len_);
    }
    *first = std::string_view(in_.data(), in_len_);
    return error_.empty();
  }

  void use(const CompressionFormat* format, std::uint64_t total, bool progress) {
    format_ = format;
    total_ = total;
    if (format != nullptr) {
      decoder_ = make_decoder(format->id);
      std::vector<char> bigger(std::max(kInBytes, in_len_));
      std::copy_n(in_.data(), in_len_, bigger.data());
      in_.swap(bigger);
    }
    progress_.start(progress);
  }

  std::uint64_t read_ = 0;     // bytes read from the descriptor
  std::uint64_t decoded_ = 0;  // bytes given to the reader
  std::string error_, ended_early_;

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    out_.resize(kOutBytes);
    const std::size_t n = fill(out_.data(), out_.size());
    if (n == 0) return traits_type::eof();
    setg(out_.data(), out_.data(), out_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

  std::streamsize xsgetn(char* s, std::streamsize n) override {
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
      if (want >= kDirect) {
        const std::size_t k = fill(s + got, want);
        if (k == 0) break;
        got += static_cast<std::streamsize>(k);
      } else if (traits_type::eq_int_type(underflow(), traits_type::eof())) {
        break;
      }
    }
    return got;
  }

 private:
  // Up to cap plain bytes into dst; 0 at the end of the input or at an error (the end for good).
  std::size_t fill(char* dst, std::size_t cap) {
    if (done_) return 0;
    const std::size_t n = decoder_ ? decode_into(dst, cap) : read_plain(dst, cap);
    if (n == 0) {
      done_ = true;
      progress_.clear();
      return 0;
    }
    decoded_ += n;
    if (progress_.on()) {
      events_ += static_cast<std::uint64_t>(std::count(dst, dst + n, '\n'));
      progress_.update({name_, read_, total_, decoded_, format_ != nullptr, events_});
    }
    return n;
  }

  std::size_t read_plain(char* dst, std::size_t cap) {
    if (in_pos_ < in_len_) {  // the first bytes, read by read_first()
      const std::size_t n = std::min(cap, in_len_ - in_pos_);
      std::memcpy(dst, in_.data() + in_pos_, n);
      in_pos_ += n;
      return n;
    }
    return read_some(dst, cap);
  }

  std::size_t decode_into(char* dst, std::size_t cap) {
    if (!corrupt_.empty()) {  // found with the bytes given before it: the end now
      error_ = std::move(corrupt_);
      return 0;
    }
    for (;;) {
      if (in_pos_ == in_len_ && !input_end_) {
        in_pos_ = 0;
        in_len_ = read_some(in_.data(), in_.size());
      }
      const std::string_view at_hand(in_.data() + in_pos_, std::min(in_len_ - in_pos_, kPiece));
      const Decoder::Step step = decoder_->decode(at_hand, dst, cap);
      in_pos_ += step.consumed;
      // The offset in the input of the first byte not taken.
      const std::uint64_t offset = read_ - (in_len_ - in_pos_);
      if (step.corrupt) {
        // Where the decoder stopped; zstd may stop at the start of the piece it found bad.
        const std::uint64_t from = offset - step.consumed;
        const std::string where = step.consumed > 0 ? "at byte " + std::to_string(offset)
                                                    : "in bytes " + std::to_string(from) + " to " +
                                                          std::to_string(from + at_hand.size());
        std::string what = name_ + ": corrupt " + std::string(format_->name) + " data, found " +
                           where + " (" + decoder_->what() + "): the log cannot be read past it";
        if (step.produced > 0) {  // what came before it first
          corrupt_ = std::move(what);
          return step.produced;
        }
        error_ = std::move(what);
        return 0;
      }
      if (step.produced > 0) return step.produced;
      if (in_pos_ == in_len_ && input_end_) {
        if (error_.empty() && decoder_->inside_frame()) {
          ended_early_ = name_ + ": the " + std::string(format_->name) +
                         " data ends in the middle of a frame, at byte " + std::to_string(offset) +
                         ": the log was cut short (a killed process, a copy in progress); every "
                         "line before the cut was read";
        }
        return 0;
      }
      if (step.consumed == 0 && !at_hand.empty()) {  // never expected of zlib or libzstd
        error_ = name_ + ": the " + std::string(format_->name) + " decoder stopped at byte " +
                 std::to_string(offset) + ": the log cannot be read past it";
        return 0;
      }
    }
  }

  // read(2) into dst; 0 at the end of the input or at an error (error_ set).
  std::size_t read_some(char* dst, std::size_t cap) {
    for (;;) {
      const ssize_t n = ::read(fd_, dst, cap);
      if (n > 0) {
        read_ += static_cast<std::uint64_t>(n);
        return static_cast<std::size_t>(n);
      }
      if (n == 0) break;
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {  // a non-blocking descriptor: wait for it
        pollfd p{fd_, POLLIN, 0};
        ::poll(&p, 1, -1);
        continue;
      }
      error_ = name_ + ": cannot read: " + std::strerror(errno);
      break;
    }
    input_end_ = true;
    return 0;
  }

  const int fd_;
  const bool own_;
  const std::string name_;
  const CompressionFormat* format_ = nullptr;
  std::unique_ptr<Decoder> decoder_;
  std::vector<char> in_;  // bytes read, not yet taken: [in_pos_, in_len_)
  std::size_t in_pos_ = 0, in_len_ = 0;
  std::vector<char> out_;  // the get area, for requests below kDirect
  std::string corrupt_;    // corrupt data found after bytes still to give: error_ after them
  bool input_end_ = false;
  bool done_ = false;
  std::uint64_t total_ = 0;   // the input's size, 0 when unknown
  std::uint64_t events_ = 0;  // newlines given, counted while the progress line is drawn
  Progress progress_;
};

LogInput::LogInput() : stream_(nullptr) {}
LogInput::~LogInput() = default;

bool LogInput::open(const std::string& path, std::string* error, const InputOptions& options) {
  const bool standard_input = path == "-";
  name_ = !options.name.empty() ? options.name : standard_input ? "<stdin>" : path;
  int fd = 0;
  if (!standard_input) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      *error = name_ + ": " + std::strerror(errno);
      return false;
    }
    if (S_ISDIR(st.st_mode)) {
      *error = name_ + " is a directory, not a log";
      return false;
    }
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *error = name_ + ": " + std::strerror(errno);
      return false;
    }
  }
  buffer_ = std::make_unique<Buffer>(fd, !standard_input, name_);
  std::uint64_t total = 0;  // a regular file's size from where it is read
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
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
  buffer_->use(format, total, options.progress);
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
  return buffer_ ? buffer_->decoded_ : 0;
}

}  // namespace cudapool::log
