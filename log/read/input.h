// SPDX-License-Identifier: Apache-2.0
// log/read/input.h: a log opened for reading by every C++ tool that reads one (cudapool-replay,
// cudapool-tune, cudapool-cat): a path or - (standard input; a FIFO, a device, a regular file),
// plain or compressed, whatever its name: its first bytes decide (compression.h). gzip and zstd
// are decoded as they are read, in bounded memory, on a thread of their own while the reader
// parses (read_ahead.h); xz and bzip2 are named and refused with what to do. stream() gives the
// plain bytes, which the line reader takes (line_reader.h); a plain input's go straight into the
// reader's buffer. A compressed input
// that ends in the middle of a frame (the log of a killed process, a copy in progress) is read to
// its last complete byte and said once (ended_early()); corrupt data stops the reading with an
// error that gives the byte offset (error()). While it is read, the progress line (progress.h).
// Not here: what a line means (tools/replay/log_event.h), writing logs (log/logger*).
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>

#include "log/read/compression.h"

namespace cudapool::log {

struct InputOptions {
  bool progress = false;  // draw the progress line while reading, when stderr is a terminal
  std::string name;       // how messages name the input; "": the path, or <stdin> for -
};

// The one wording of an input that cannot be read, for every tool (the Python side words it so
// too): "cannot read NAME: why".
std::string cannot_read(const std::string& name, const std::string& why);

class LogInput {
 public:
  LogInput();
  // Stops and joins the decoding thread, wherever it waits (read_ahead.h: never on the input);
  // clears the progress line; closes the file (never standard input).
  ~LogInput();
  LogInput(const LogInput&) = delete;
  LogInput& operator=(const LogInput&) = delete;

  // Whether path may be a log, without opening it (a FIFO's first bytes stay unread): false with
  // *error set in open()'s words ("cannot read NAME: why", "NAME is a directory, not a log";
  // name: how messages name it, "": the path). *regular: a regular file, which can be read again
  // from its start. "-" (standard input) passes, not regular.
  static bool check(const std::string& path, bool* regular, std::string* error,
                    const std::string& name = "");

  // Opens path ("-": standard input) and reads its first bytes. false with *error set, one line
  // that names the input, when it cannot be read: missing, not permitted ("cannot read NAME:
  // why"), a directory, a format the readers do not decode (with what to do), a read error. Once
  // per LogInput.
  bool open(const std::string& path, std::string* error, const InputOptions& options = {});

  // The plain bytes of the input, to its end or to the first error.
  std::istream& stream() { return stream_; }
  // The input as messages name it: InputOptions::name, else "<stdin>" for -, else the path.
  const std::string& name() const { return name_; }
  Compression compression() const { return compression_; }

  // After stream() ended: why the input could not be read to its end (corrupt compressed data at
  // byte N, a read error: "cannot read NAME: why"), one line naming it; "" when it was. The one
  // failure of a read: stream() itself never fails (its bad() stays false).
  const std::string& error() const;
  // After stream() ended: "" or, when the compressed input ended in the middle of a frame, what
  // to say of it (one line naming it). Not an error: every byte before the cut was read.
  const std::string& ended_early() const;

  std::uint64_t bytes_read() const;     // of the input (compressed, for a compressed one)
  std::uint64_t bytes_decoded() const;  // plain bytes given by stream(), as far as read

 private:
  class Buffer;  // the std::streambuf under stream() (input.cpp)
  std::unique_ptr<Buffer> buffer_;
  std::istream stream_;
  std::string name_;
  Compression compression_ = Compression::kNone;
};

}  // namespace cudapool::log
