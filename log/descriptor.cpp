// SPDX-License-Identifier: Apache-2.0
// log/descriptor.cpp: see descriptor.h.
#include "log/descriptor.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace cudapool::log {

namespace {

constexpr int kWriteSignals[2] = {SIGPIPE, SIGXFSZ};
constexpr int kHighDescriptor = 512;

std::uint64_t now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000u +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1000000u;
}

}  // namespace

std::string stall_text(std::uint32_t stall_ms) {
  char text[64];
  std::snprintf(text, sizeof text, "nothing written for %g s", stall_ms / 1000.0);
  return text;
}

NoWriteSignals::NoWriteSignals() {
  sigset_t block, old, pending;
  sigemptyset(&block);
  for (const int sig : kWriteSignals) sigaddset(&block, sig);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  sigpending(&pending);
  for (int i = 0; i < 2; ++i) {
    was_blocked_[i] = sigismember(&old, kWriteSignals[i]) == 1;
    was_pending_[i] = sigismember(&pending, kWriteSignals[i]) == 1;
  }
}

NoWriteSignals::~NoWriteSignals() {
  const int saved_errno = errno;
  sigset_t pending, unblock;
  sigemptyset(&unblock);
  const bool known = sigpending(&pending) == 0;
  for (int i = 0; i < 2; ++i) {
    const int sig = kWriteSignals[i];
    if (known && !was_pending_[i] && sigismember(&pending, sig) == 1) {
      sigset_t one;
      sigemptyset(&one);
      sigaddset(&one, sig);
      const timespec now{0, 0};
      while (sigtimedwait(&one, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    if (!was_blocked_[i]) sigaddset(&unblock, sig);
  }
  pthread_sigmask(SIG_UNBLOCK, &unblock, nullptr);
  errno = saved_errno;
}

int write_all(int fd, std::string_view data, std::uint32_t stall_ms) {
  NoWriteSignals no_signals;
  struct stat st;
  const bool stream = fstat(fd, &st) != 0 || !S_ISREG(st.st_mode);
  std::size_t done = 0;
  std::uint64_t progress_at = now_ms();
  while (done < data.size()) {
    std::size_t piece = data.size() - done;
    if (stream) {
      // Room first: a write of at most PIPE_BUF bytes that poll(2) allows does not block.
      piece = piece < PIPE_BUF ? piece : PIPE_BUF;
      const std::uint64_t waited = now_ms() - progress_at;
      if (waited >= stall_ms) return kStalled;
      pollfd p{fd, POLLOUT, 0};
      const int ready = poll(&p, 1, static_cast<int>(stall_ms - waited));
      if (ready == 0 || (ready < 0 && errno == EINTR)) continue;
      if (ready < 0) return errno;
    }
    const ssize_t n = write(fd, data.data() + done, piece);
    if (n > 0) {
      done += static_cast<std::size_t>(n);
      progress_at = now_ms();
      continue;
    }
    if (n < 0 && (errno == EINTR || (stream && errno == EAGAIN))) continue;
    return n == 0 ? ENOSPC : errno;
  }
  return 0;
}

std::string failure_text(int err, std::uint32_t stall_ms) {
  if (err == kStalled) return "reader stalled: " + stall_text(stall_ms);
  char buf[128];
  return strerror_r(err, buf, sizeof buf);  // the GNU form: returns the message
}

int keep_high(int fd) {
  int base = kHighDescriptor;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      limit.rlim_cur / 2 < static_cast<rlim_t>(base)) {
    base = static_cast<int>(limit.rlim_cur / 2);
  }
  if (fd < 0 || fd >= base) return fd;
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, base);
  if (high < 0) return fd;
  close(fd);
  return high;
}

int reopen_same_file(const std::string& path, dev_t dev, ino_t ino) {
  int fd;
  do {
    fd = open(path.c_str(), O_WRONLY | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_dev != dev || st.st_ino != ino) {
    close(fd);
    errno = EXDEV;
    return -1;
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  return keep_high(fd);
}

}  // namespace cudapool::log
