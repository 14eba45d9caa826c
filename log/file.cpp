// SPDX-License-Identifier: Apache-2.0
// log/file.cpp: see file.h.
#include "log/file.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace cudapool::log {

namespace {

// "log PATH" or "summary PATH": how every message names the file.
std::string label(FileKind kind, const std::string& path) {
  return (kind == FileKind::kLog ? "log " : "summary ") + path;
}

std::string cannot_write(FileKind kind, const std::string& path, int err) {
  return label(kind, path) + ": cannot write " +
         (kind == FileKind::kLog ? "the header" : "the summary") + " (" + failure_text(err) + ")";
}

std::string cannot_create(FileKind kind, const std::string& path, int err) {
  return label(kind, path) + ": cannot create (" + failure_text(err) + ")";
}

std::string numbered(const std::string& path, int suffix) {
  return suffix == 0 ? path : path + "." + std::to_string(suffix);
}

std::string note_for(FileKind kind, const std::string& path, const std::string& used) {
  return label(kind, path) + " exists: writing to " + used + " instead";
}

std::string all_taken(FileKind kind, const std::string& path) {
  return label(kind, path) + ": " + path + " and " + path + ".1 to " + path + "." +
         std::to_string(kMaxSuffix) + " all exist";
}

std::string parent_dir(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

bool in_dev(const std::string& path) {
  char resolved[PATH_MAX];
  if (realpath(parent_dir(path).c_str(), resolved) == nullptr) return false;
  const std::string_view r = resolved;
  const auto under = [&](std::string_view root) {
    return r.substr(0, root.size()) == root && (r.size() == root.size() || r[root.size()] == '/');
  };
  return under("/dev") && !under("/dev/shm");
}

namespace {

enum class AtName { kNothing, kStream, kTaken };

bool trusted_owner(const struct stat& st) {
  return st.st_uid == 0 || st.st_uid == geteuid();
}

// What the name holds: nothing (or nothing lstat can see: the creation says why), a character
// device or FIFO to write to, or something else that takes the name. A link is followed only
// when root or this user owns it, and a FIFO taken only when root or this user owns it (anyone
// may leave a FIFO in /tmp to read what is written to it; only root makes device nodes).
AtName what_is_at(const std::string& path, mode_t* mode) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return AtName::kNothing;
  if (S_ISLNK(st.st_mode)) {
    if (!trusted_owner(st)) return AtName::kTaken;
    if (stat(path.c_str(), &st) != 0) return AtName::kTaken;  // dangling
  }
  *mode = st.st_mode;
  const bool stream = S_ISCHR(st.st_mode) || (S_ISFIFO(st.st_mode) && trusted_owner(st));
  return stream ? AtName::kStream : AtName::kTaken;
}

// An existing character device or FIFO, written as it is.
CreatedFile open_stream(const std::string& path, std::string_view first, FileKind kind,
                        mode_t mode) {
  CreatedFile out;
  int fd;
  do {
    fd = open(path.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    out.error = label(kind, path) + ": cannot open (" +
                (err == ENXIO && S_ISFIFO(mode) ? "a FIFO without a reader" : failure_text(err)) +
                ")";
    return out;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    close(fd);
    out.error = label(kind, path) + ": changed while it was opened";
    return out;
  }
  const int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);  // a slow reader slows the writer
  // (write_all waits for room with poll(2), so a reader that stopped reading ends the wait).
  if (const int err = write_all(fd, first); err != 0) {
    close(fd);
    out.error = cannot_write(kind, path, err);
    return out;
  }
  out.fd = fd;
  out.path = path;
  return out;
}

// The descriptor of an O_TMPFILE file keeps its anonymous name after the link (/proc/PID/fd shows
// "DIR/#123 (deleted)"): the name just linked is opened again and, when it still is the same
// file, that descriptor (at the end of what was written) replaces the first.
int by_its_name(int fd, const std::string& name, std::size_t written) {
  const int named = open(name.c_str(), O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (named < 0) return fd;
  struct stat mine, there;
  if (fstat(fd, &mine) == 0 && fstat(named, &there) == 0 && mine.st_dev == there.st_dev &&
      mine.st_ino == there.st_ino &&
      lseek(named, static_cast<off_t>(written), SEEK_SET) == static_cast<off_t>(written)) {
    fcntl(named, F_SETFL, fcntl(named, F_GETFL) & ~O_NONBLOCK);
    close(fd);
    return named;
  }
  close(named);
  return fd;
}

// A new file made unnamed in the directory, written, then linked in under the first free name.
// *unsupported: the file system (or a missing /proc) does not allow it; nothing was made.
CreatedFile create_linked(const std::string& path, std::string_view first, FileKind kind,
                          bool* unsupported) {
  CreatedFile out;
  int fd;
  do {
    fd = open(parent_dir(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    const int err = errno;
    if (err == EISDIR || err == EOPNOTSUPP || err == EINVAL) {
      *unsupported = true;
    } else {
      out.error = cannot_create(kind, path, err);
    }
    return out;
  }
  if (const int err = write_all(fd, first); err != 0) {
    close(fd);  // the unnamed file goes with its descriptor
    out.error = cannot_write(kind, path, err);
    return out;
  }
  char self[64];
  snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
  for (int suffix = 0; suffix <= kMaxSuffix; ++suffix) {
    const std::string name = numbered(path, suffix);
    if (linkat(AT_FDCWD, self, AT_FDCWD, name.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      out.fd = by_its_name(fd, name, first.size());
      out.path = name;
      out.created = true;
      if (suffix > 0) out.note = note_for(kind, path, name);
      return out;
    }
    if (errno != EEXIST) {  // no /proc, no links here, ...: the plain way says what is wrong
      close(fd);
      *unsupported = true;
      return out;
    }
  }
  close(fd);
  out.error = all_taken(kind, path);
  return out;
}

// The plain way: O_CREAT|O_EXCL|O_NOFOLLOW under the first free name, then the content at once.
CreatedFile create_exclusive(const std::string& path, std::string_view first, FileKind kind) {
  CreatedFile out;
  for (int suffix = 0; suffix <= kMaxSuffix; ++suffix) {
    const std::string name = numbered(path, suffix);
    int fd;
    do {
      fd = open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    } while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
      if (const int err = write_all(fd, first); err != 0) {
        close(fd);
        unlink(name.c_str());
        out.error = cannot_write(kind, name, err);
        return out;
      }
      out.fd = fd;
      out.path = name;
      out.created = true;
      if (suffix > 0) out.note = note_for(kind, path, name);
      return out;
    }
    const int err = errno;
    if (err != EEXIST) {
      out.error = cannot_create(kind, name, err);
      return out;
    }
  }
  out.error = all_taken(kind, path);
  return out;
}

// Whether the name can only be a directory's: it ends in '/', its last component is '.' or '..',
// or it is an existing directory (through a symbolic link or not).
bool names_directory(const std::string& path) {
  if (path.back() == '/') return true;
  const std::size_t slash = path.rfind('/');
  const std::string_view last =
      std::string_view(path).substr(slash == std::string::npos ? 0 : slash + 1);
  if (last == "." || last == "..") return true;
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The rules that come before any creation, the same for create_log_file and check_log_file: ""
// when the name may be written to (*at says how), else the error.
std::string refused(const std::string& path, FileKind kind, AtName* at, mode_t* mode) {
  if (path.empty()) return kind == FileKind::kLog ? "empty log path" : "empty summary path";
  if (names_directory(path)) return label(kind, path) + ": a directory, not a file name";
  *at = what_is_at(path, mode);
  if (*at != AtName::kStream && in_dev(path)) {
    return label(kind, path) + ": " +
           (*at == AtName::kNothing ? "does not exist" : "not a character device or a FIFO") +
           ", and nothing is created in /dev";
  }
  return "";
}

}  // namespace

bool names_stream(const std::string& path) {
  mode_t mode = 0;
  return !path.empty() && !names_directory(path) && what_is_at(path, &mode) == AtName::kStream;
}

CreatedFile create_log_file(const std::string& path, std::string_view first, FileKind kind) {
  CreatedFile out;
  AtName at = AtName::kNothing;
  mode_t mode = 0;
  out.error = refused(path, kind, &at, &mode);
  if (!out.error.empty()) return out;
  if (at == AtName::kStream) return open_stream(path, first, kind, mode);
  bool unsupported = false;
  CreatedFile linked = create_linked(path, first, kind, &unsupported);
  return unsupported ? create_exclusive(path, first, kind) : linked;
}

std::string check_log_file(const std::string& path, FileKind kind) {
  AtName at = AtName::kNothing;
  mode_t mode = 0;
  std::string error = refused(path, kind, &at, &mode);
  if (!error.empty() || at == AtName::kStream) return error;
  // A new file (NAME or NAME.k) in the directory: it must be one this user may create files in.
  const std::string dir = parent_dir(path);
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return cannot_create(kind, path, errno);
  if (!S_ISDIR(st.st_mode)) return cannot_create(kind, path, ENOTDIR);
  if (faccessat(AT_FDCWD, dir.c_str(), W_OK | X_OK, AT_EACCESS) != 0) {
    return cannot_create(kind, path, errno);
  }
  return "";
}

}  // namespace cudapool::log
