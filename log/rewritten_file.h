// SPDX-License-Identifier: Apache-2.0
// log/rewritten_file.h: a file that one process makes and then replaces whole, again and again,
// and never puts over a file it did not make (the CUDAPOOL_METRICS textfile; the rules of the
// log's files, file.h, where they apply):
// - Each version is written whole as PATH.tmp.PID (created anew: O_CREAT|O_EXCL|O_NOFOLLOW, mode
//   0644 less the umask, in PATH's directory) and only then put at PATH, so a reader sees one
//   version or the next, never a part.
// - The first version only where PATH is free (renameat2 RENAME_NOREPLACE, else link + unlink):
//   a name that is taken (a file, a link, dangling or not, a FIFO, a device, another process's or
//   this process's own log) is left as it is, and nothing is written from then on.
// - Each later version only over the file this object put there last (device and inode
//   remembered): renameat2 RENAME_EXCHANGE, then what came out is checked and swapped back when
//   it was not ours; where the file system cannot exchange, checked with lstat just before a
//   rename. A file replaced or removed by someone else is left as it is, and nothing is written
//   from then on.
// - Nothing is created, replaced or removed in /dev (PATH's directory resolved; /dev/shm
//   excepted, as for the log: file.h's in_dev).
// - remove() takes away only what is still this object's own (the file, a temporary), and is
//   async-signal-safe: a signal handler, _exit or exec may call it while write() runs on another
//   thread (it waits, bounded, for that write, and no write follows until reopen()).
// Prints nothing: the caller warns. Not here: what is written (shim/control/metrics_file.h), when.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace cudapool::log {

class RewrittenFile {
 public:
  // PATH.tmp.PID is named with this process's pid now.
  explicit RewrittenFile(std::string path);
  RewrittenFile(const RewrittenFile&) = delete;
  RewrittenFile& operator=(const RewrittenFile&) = delete;

  enum class Outcome {
    kWritten,  // PATH holds text
    kFailed,   // not this time (*why); the next write tries again
    kStopped,  // never again (*why, once: the name taken, the file replaced or removed, /dev)
    kIdle,     // nothing done, no why: stopped before, or remove() ran (and no reopen() since)
  };
  // PATH's content becomes text, whole. Not thread-safe against another write().
  Outcome write(std::string_view text, std::string* why);

  // Removes the file and the temporary, each only while it is still the one this object made
  // (checked just before the unlink); afterwards write() does nothing until reopen(). Waits at
  // most wait_ms for a write() in progress on another thread. Async-signal-safe; call it in the
  // process that made the file only (a fork child must not).
  void remove(unsigned wait_ms) noexcept;

  // After remove(), in the same process (an exec that failed): writes resume, the next one
  // making the file anew where the name is free.
  void reopen() noexcept;

  const std::string& path() const { return path_; }
  bool stopped() const { return stopped_.load(std::memory_order_relaxed); }

 private:
  Outcome put(std::string_view text, std::string* why);
  Outcome first_version(std::string* why);
  Outcome replace_version(std::string* why);
  Outcome lost(std::string* why, bool replaced);
  Outcome stop(std::string* why, std::string text);
  void adopt_temporary() noexcept;
  void forget_temporary() noexcept;

  const std::string path_;
  const std::string temporary_;
  // The file at PATH (made_: one is there) and the temporary while it exists: identities read by
  // remove(), written by write() only while busy_ is set.
  std::atomic<bool> made_{false};
  std::atomic<std::uint64_t> dev_{0}, ino_{0};
  std::atomic<bool> temporary_made_{false};
  std::atomic<std::uint64_t> temporary_dev_{0}, temporary_ino_{0};
  // A write in progress, and remove()'s request that none follows: each side sets its own flag
  // and then reads the other's (sequentially consistent), so a write either sees the request
  // and does nothing, or remove() sees the write and waits for it.
  std::atomic<bool> busy_{false}, closed_{false};
  std::atomic<bool> stopped_{false};
};

}  // namespace cudapool::log
