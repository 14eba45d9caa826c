// SPDX-License-Identifier: Apache-2.0
// shim/control/control_socket.cpp: see control_socket.h.
#include "shim/control/control_socket.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cudapool::shim {

namespace {

std::string errno_text(int e) {
  return std::strerror(e);
}

bool is_on(const std::string& v) {
  return v == "1" || v == "true" || v == "True" || v == "yes" || v == "on";
}

// The directory opened without following a link, checked: ours, a directory, mode 0700 or less.
int open_checked_directory(const std::string& dir, std::string* why) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    *why = dir + ": cannot make the directory (" + errno_text(errno) + ")";
    return -1;
  }
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    *why = dir + (e == ELOOP || e == ENOTDIR ? ": not a directory (or a symbolic link)"
                                             : ": cannot open (" + errno_text(e) + ")");
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
    *why = dir + ": not a directory";
    ::close(fd);
    return -1;
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    char text[160];
    std::snprintf(text, sizeof text,
                  ": owner uid %u, mode %04o; it must be yours (uid %u) with mode 0700",
                  static_cast<unsigned>(st.st_uid), static_cast<unsigned>(st.st_mode & 07777),
                  static_cast<unsigned>(::geteuid()));
    *why = dir + text;
    ::close(fd);
    return -1;
  }
  return fd;
}

// Whether a taken name is a dead socket of ours (a process that had our pid and did not remove
// it): a socket, owned by us, that refuses a connection.
bool stale_socket(int dir_fd, const std::string& name, const std::string& path) {
  struct stat st {};
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (!S_ISSOCK(st.st_mode) || st.st_uid != ::geteuid()) return false;
  const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (probe < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const bool refused = ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 &&
                       errno == ECONNREFUSED;
  ::close(probe);
  return refused;
}

}  // namespace

std::string control_directory(const std::string& value, std::string* why) {
  if (value.find('/') != std::string::npos) {
    std::string dir = value;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    return dir;
  }
  if (!is_on(value)) {
    *why = "accepted: 1 (the default directory) or a directory (a path with a '/')";
    return "";
  }
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  if (runtime != nullptr && runtime[0] == '/') return std::string(runtime) + "/cudapool";
  return "/tmp/cudapool-" + std::to_string(::geteuid());
}

bool open_endpoint(const std::string& value, ControlEndpoint* out, std::string* why) {
  const std::string dir = control_directory(value, why);
  if (dir.empty()) return false;
  const std::string name = std::to_string(::getpid()) + ".sock";
  const std::string path = dir + "/" + name;
  sockaddr_un addr{};
  if (path.size() >= sizeof addr.sun_path) {
    *why = path + ": longer than a socket's name may be (" +
           std::to_string(sizeof addr.sun_path - 1) + " bytes)";
    return false;
  }
  const int dir_fd = open_checked_directory(dir, why);
  if (dir_fd < 0) return false;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    *why = "socket: " + errno_text(errno);
    ::close(dir_fd);
    return false;
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  auto bind_once = [&] { return ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr); };
  int rc = bind_once();
  if (rc != 0 && errno == EADDRINUSE && stale_socket(dir_fd, name, path)) {
    ::unlinkat(dir_fd, name.c_str(), 0);
    rc = bind_once();
  }
  if (rc != 0) {
    const int e = errno;
    *why = path + (e == EADDRINUSE ? ": the name is taken (not a dead socket of yours)"
                                   : ": cannot bind (" + errno_text(e) + ")");
    ::close(fd);
    ::close(dir_fd);
    return false;
  }
  // The directory's path must still name the directory checked (nobody else can change it
  // inside, but its path could have been swapped); the file is made the user's alone before
  // anyone can connect (listen comes after).
  struct stat by_fd {
  }, by_path{}, sock{};
  const bool same_dir = ::fstat(dir_fd, &by_fd) == 0 && ::lstat(dir.c_str(), &by_path) == 0 &&
                        by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino;
  if (!same_dir || ::fchmodat(dir_fd, name.c_str(), 0600, 0) != 0 ||
      ::fstatat(dir_fd, name.c_str(), &sock, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISSOCK(sock.st_mode) ||
      ::listen(fd, 64) != 0) {
    *why = path + ": the directory changed while the socket was made";
    if (same_dir) ::unlinkat(dir_fd, name.c_str(), 0);
    ::close(fd);
    ::close(dir_fd);
    return false;
  }
  out->listen_fd = fd;
  out->dir_fd = dir_fd;
  out->path = path;
  out->name = name;
  out->dev = sock.st_dev;
  out->ino = sock.st_ino;
  return true;
}

void remove_endpoint(ControlEndpoint& e) {
  if (e.listen_fd >= 0) ::close(e.listen_fd);
  e.listen_fd = -1;
  if (e.dir_fd < 0) return;
  struct stat st {};
  if (::fstatat(e.dir_fd, e.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
      st.st_dev == e.dev && st.st_ino == e.ino) {
    ::unlinkat(e.dir_fd, e.name.c_str(), 0);
  }
  ::close(e.dir_fd);
  e.dir_fd = -1;
}

void unlink_socket_if_same(const char* path, std::uint64_t dev, std::uint64_t ino) noexcept {
  struct stat st {};
  if (::lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) && st.st_dev == dev && st.st_ino == ino) {
    ::unlink(path);
  }
}

void forget_endpoint_after_fork(ControlEndpoint& e) {
  if (e.listen_fd >= 0) ::close(e.listen_fd);
  if (e.dir_fd >= 0) ::close(e.dir_fd);
  e.listen_fd = -1;
  e.dir_fd = -1;
}

bool peer_is_owner(int fd, std::uint64_t* pid, std::uint64_t* uid) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
    return false;
  }
  *pid = static_cast<std::uint64_t>(cred.pid);
  *uid = static_cast<std::uint64_t>(cred.uid);
  return cred.uid == ::geteuid();
}

}  // namespace cudapool::shim
