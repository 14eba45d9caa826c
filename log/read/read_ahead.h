// SPDX-License-Identifier: Apache-2.0
// log/read/read_ahead.h: an InputSource (input_source.h) read on a thread of its own, so that a
// compressed log is decoded while the reader parses what came before: the thread fills a small,
// fixed ring of chunks (4 x 1 MiB: memory stays bounded whatever the log) and the reader takes
// them in order, one at a time. From a regular file a chunk is handed over when full (a reader
// that waits takes whole chunks: handing over less each time it waits would fill the ring with
// small chunks and stall the thread); from anything else (a pipe, a FIFO, a terminal, which may
// trickle and then wait) after each decoding step that gave bytes, so that what came is read as it
// comes, as without the thread, and never held back while the thread waits for more. The end of the
// input (its end, a read error, corrupt data, a stream cut short) comes after every chunk decoded
// before it; the source's error() and ended_early() are the reader's to read then.
// Stopping early (a tool that exits, an error elsewhere) never hangs: the destructor wakes the
// thread wherever it waits (for a free chunk, or for the input: InputSource polls an eventfd
// beside its descriptor, so a FIFO whose writer stays open and silent does not hold it) and joins
// it; the thread is between two decoding steps of at most 32 KiB of input otherwise.
// Not here: reading and decoding (input_source.h), the stream over the chunks (input.cpp).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace cudapool::log {

class InputSource;

class ReadAhead {
 public:
  static constexpr std::size_t kChunks = 4;
  static constexpr std::size_t kChunkBytes = std::size_t{1} << 20;

  struct Chunk {
    const char* data = nullptr;
    std::size_t size = 0;    // > 0
    std::uint64_t read = 0;  // the source's bytes_read() when the chunk was complete
  };

  // Starts the thread, which uses source alone until the end (the caller touches it again only
  // after next() returned false, or after the destructor). whole_chunks: the source is a regular
  // file (fill chunks whole). Throws std::system_error when no thread or eventfd can be had (the
  // caller then reads the source itself).
  ReadAhead(InputSource& source, bool whole_chunks, std::size_t chunks = kChunks,
            std::size_t chunk_bytes = kChunkBytes);
  ~ReadAhead();  // stops the thread and joins it
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  // The next chunk in order (the one given before is given back: its bytes are no longer
  // valid); false at the end, for good.
  bool next(Chunk* chunk);
  // After next() returned false: what stopped the thread other than the source ("": nothing),
  // e.g. std::bad_alloc's what().
  const std::string& failure() const { return failure_; }
  // Chunks filled and not yet taken by next() (for the tests: the ring is full at kChunks - 1
  // while the reader holds one).
  std::size_t ready();

 private:
  struct Slot {
    std::vector<char> bytes;
    std::size_t size = 0;
    std::uint64_t read = 0;
  };
  void run();
  void produce();

  InputSource& source_;
  const bool whole_chunks_;
  std::vector<Slot> slots_;
  std::mutex mutex_;
  std::condition_variable filled_;  // a chunk was filled, or the end came
  std::condition_variable freed_;   // a chunk was given back, or stop
  std::uint64_t head_ = 0;          // chunks filled
  std::uint64_t tail_ = 0;          // chunks taken by the reader
  std::uint64_t released_ = 0;      // chunks given back
  bool end_ = false;                // no chunk after head_
  bool stop_ = false;               // the destructor runs
  std::string failure_;
  int stop_fd_ = -1;  // an eventfd, written once by the destructor
  std::thread thread_;
};

}  // namespace cudapool::log
