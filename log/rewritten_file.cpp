// SPDX-License-Identifier: Apache-2.0
// log/rewritten_file.cpp: see rewritten_file.h.
#include "log/rewritten_file.h"

#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_NOREPLACE, RENAME_EXCHANGE
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "log/descriptor.h"
#include "log/file.h"

namespace cudapool::log {

namespace {

// Whether the name holds the file (dev, ino), not following a link. Async-signal-safe.
bool is_at(const char* path, std::uint64_t dev, std::uint64_t ino) {
  struct stat st;
  return ::lstat(path, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

// The file system (or the kernel) cannot do this kind of rename.
bool cannot_do(int err) {
  return err == EINVAL || err == ENOSYS || err == EOPNOTSUPP;
}

}  // namespace

RewrittenFile::RewrittenFile(std::string path)
    : path_(std::move(path)), temporary_(path_ + ".tmp." + std::to_string(::getpid())) {}

RewrittenFile::Outcome RewrittenFile::write(std::string_view text, std::string* why) {
  busy_.store(true);
  Outcome out = Outcome::kIdle;
  if (!closed_.load() && !stopped_.load()) {
    out = in_dev(path_) ? stop(why, path_ + ": nothing is created in /dev") : put(text, why);
  }
  busy_.store(false);
  return out;
}

RewrittenFile::Outcome RewrittenFile::put(std::string_view text, std::string* why) {
  int fd;
  do {
    fd = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    *why = temporary_ + ": cannot create (" + failure_text(errno) + ")";
    return Outcome::kFailed;
  }
  struct stat st;
  if (::fstat(fd, &st) == 0) {
    temporary_dev_.store(st.st_dev);
    temporary_ino_.store(st.st_ino);
    temporary_made_.store(true);
  }
  int err = write_all(fd, text);  // no SIGXFSZ past ulimit -f (descriptor.h)
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    *why = temporary_ + ": cannot write (" + failure_text(err) + ")";
    forget_temporary();
    return Outcome::kFailed;
  }
  return made_.load() ? replace_version(why) : first_version(why);
}

RewrittenFile::Outcome RewrittenFile::first_version(std::string* why) {
  const char* tmp = temporary_.c_str();
  int rc = ::renameat2(AT_FDCWD, tmp, AT_FDCWD, path_.c_str(), RENAME_NOREPLACE);
  if (rc != 0 && cannot_do(errno)) {
    rc = ::link(tmp, path_.c_str());  // never over an existing name, never through a link there
    if (rc == 0) ::unlink(tmp);
  }
  if (rc != 0) {
    const int err = errno;
    forget_temporary();
    if (err == EEXIST) {
      return stop(why, path_ + " exists and this process did not make it: it is left as it is");
    }
    *why = path_ + ": cannot put the file there (" + failure_text(err) + ")";
    return Outcome::kFailed;
  }
  adopt_temporary();
  return Outcome::kWritten;
}

RewrittenFile::Outcome RewrittenFile::replace_version(std::string* why) {
  const char* tmp = temporary_.c_str();
  const char* path = path_.c_str();
  if (::renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE) == 0) {
    if (is_at(tmp, dev_.load(), ino_.load())) {  // the previous version came out: ours
      ::unlink(tmp);
      adopt_temporary();
      return Outcome::kWritten;
    }
    ::renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_EXCHANGE);  // theirs goes back
    return lost(why, true);
  }
  int err = errno;
  if (err == ENOENT) return lost(why, false);
  if (cannot_do(err)) {  // no exchange here: checked, then renamed
    struct stat st;
    if (::lstat(path, &st) != 0 || st.st_dev != dev_.load() || st.st_ino != ino_.load()) {
      return lost(why, ::lstat(path, &st) == 0);
    }
    if (::rename(tmp, path) == 0) {
      adopt_temporary();
      return Outcome::kWritten;
    }
    err = errno;
  }
  forget_temporary();
  *why = path_ + ": cannot put the new version there (" + failure_text(err) + ")";
  return Outcome::kFailed;
}

// The file at the name is no longer ours: someone replaced or removed it.
RewrittenFile::Outcome RewrittenFile::lost(std::string* why, bool replaced) {
  forget_temporary();
  made_.store(false);
  return stop(why, path_ + (replaced ? " was replaced by another file: it is left as it is"
                                     : " was removed"));
}

RewrittenFile::Outcome RewrittenFile::stop(std::string* why, std::string text) {
  stopped_.store(true);
  *why = std::move(text);
  return Outcome::kStopped;
}

void RewrittenFile::adopt_temporary() noexcept {
  dev_.store(temporary_dev_.load());
  ino_.store(temporary_ino_.load());
  made_.store(true);
  temporary_made_.store(false);
}

void RewrittenFile::forget_temporary() noexcept {
  if (temporary_made_.exchange(false) &&
      is_at(temporary_.c_str(), temporary_dev_.load(), temporary_ino_.load())) {
    ::unlink(temporary_.c_str());
  }
}

void RewrittenFile::remove(unsigned wait_ms) noexcept {
  closed_.store(true);
  for (unsigned waited = 0; busy_.load() && waited < wait_ms; ++waited) {
    const timespec ms{0, 1000 * 1000};
    ::nanosleep(&ms, nullptr);
  }
  forget_temporary();
  if (made_.exchange(false) && is_at(path_.c_str(), dev_.load(), ino_.load())) {
    ::unlink(path_.c_str());
  }
}

void RewrittenFile::reopen() noexcept {
  closed_.store(false);
}

}  // namespace cudapool::log
