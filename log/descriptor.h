// SPDX-License-Identifier: Apache-2.0
// log/descriptor.h: writing to the log's or the summary's descriptor without harm to the program:
// no signal from a write (SIGPIPE from a FIFO whose reader left, SIGXFSZ past a file size limit),
// no wait without end on a reader that stopped reading, and the log's descriptor kept out of the
// program's way (a high number) and found again by its name when the program closed it (a daemon
// closing every descriptor). Prints nothing: the caller warns. Not here: choosing and creating the
// destination (file.h), what is written (logger.h, format.h).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace cudapool::log {

// How long a write may make no progress at all before the log or summary gives it up: a reader
// that opened a FIFO and stopped reading, a hung network file system.
inline constexpr std::uint32_t kStallMs = 10000;

// "nothing written for 10 s": the words of every message about a stall of stall_ms.
std::string stall_text(std::uint32_t stall_ms);

// While one is alive, a write on this thread fails with an errno instead of raising a signal that
// would end the process: SIGPIPE (EPIPE: a pipe or FIFO whose reader left) and SIGXFSZ (EFBIG: past
// the file size limit, ulimit -f) are blocked, and one raised meanwhile is taken back (one that was
// pending before stays pending).
class NoWriteSignals {
 public:
  NoWriteSignals();
  ~NoWriteSignals();
  NoWriteSignals(const NoWriteSignals&) = delete;
  NoWriteSignals& operator=(const NoWriteSignals&) = delete;

 private:
  bool was_pending_[2] = {false, false};
  bool was_blocked_[2] = {false, false};
};

// The errno of a write that made no progress for stall_ms (not a value write(2) gives).
inline constexpr int kStalled = -1;

// Writes all of data to fd (blocking or not) under NoWriteSignals. Anything but a regular file is
// written in pieces of at most PIPE_BUF bytes, each after poll(2) says there is room: when there
// was none for stall_ms, it gives up. Returns 0, or the errno of the failure (kStalled for a
// stall); a regular file may have a part of data.
int write_all(int fd, std::string_view data, std::uint32_t stall_ms = kStallMs);

// An errno's text for a message (strerror), or for kStalled "reader stalled: " + stall_text().
std::string failure_text(int err, std::uint32_t stall_ms = kStallMs);

// fd moved to a number at or above the program's usual ones (512, or half the descriptor limit
// when that is lower; close-on-exec), the old number closed; fd itself when that fails. A program
// that closes a descriptor and opens a file gets the lowest free number, so a high one is hardly
// ever reused.
int keep_high(int fd);

// The file at path opened again for writing (O_WRONLY|O_NOFOLLOW|O_CLOEXEC, never created; a FIFO
// only when it has a reader, then blocking) when it is still the file dev/ino (stat(2)), moved
// high (keep_high); -1 with errno otherwise (EXDEV: another file now has that name).
int reopen_same_file(const std::string& path, dev_t dev, ino_t ino);

}  // namespace cudapool::log
