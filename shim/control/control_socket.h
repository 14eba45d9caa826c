// SPDX-License-Identifier: Apache-2.0
// shim/control/control_socket.h: the control endpoint's Unix socket, for the owning user only.
// CUDAPOOL_CONTROL=1 puts it in $XDG_RUNTIME_DIR/cudapool/ (or /tmp/cudapool-UID/ without one),
// a value with a '/' names the directory instead; the socket is PID.sock there. The directory is
// made with mode 0700 when missing and must then be a directory (never a symbolic link: opened
// with O_NOFOLLOW), owned by the user, with no permission for group or others; otherwise there is
// no socket, with one warning. The socket is bound (bind never follows a link, and a name that is
// taken is not reused unless it is a socket of the user's that no one listens on: a dead process's
// with the same pid), made mode 0600 before it listens, and removed at exit only while it is still
// the file this process made. Each connection's peer must be the same user (SO_PEERCRED), besides
// the file's mode. Not here: what is served (control.cpp's loop, control_commands.h).
#pragma once

#include <cstdint>
#include <string>

namespace cudapool::shim {

struct ControlEndpoint {
  int listen_fd = -1;              // non-blocking, close-on-exec
  int dir_fd = -1;                 // the directory, for the removal at exit
  std::string path;                // DIRECTORY/PID.sock
  std::string name;                // PID.sock
  std::uint64_t dev = 0, ino = 0;  // the socket file's identity
};

// The directory CUDAPOOL_CONTROL's value names ("" with *why when the value is neither 1, true,
// True, yes, on, nor a path with a '/').
std::string control_directory(const std::string& value, std::string* why);

// Makes the endpoint; false with *why (one line, for a warning) when there can be none.
bool open_endpoint(const std::string& value, ControlEndpoint* out, std::string* why);

// At exit: removes the socket file if it is still the one open_endpoint made; closes the fds.
void remove_endpoint(ControlEndpoint& endpoint);

// At the process's end without exit (a handled signal, _exit, before an exec): removes the socket
// file at path if it is still the socket (dev, ino), checked just before. Async-signal-safe.
void unlink_socket_if_same(const char* path, std::uint64_t dev, std::uint64_t ino) noexcept;

// In a child after fork: closes the fds, removes nothing (the file is the parent's).
void forget_endpoint_after_fork(ControlEndpoint& endpoint);

// Whether the peer of an accepted connection runs as this process's user; its pid and uid.
bool peer_is_owner(int fd, std::uint64_t* pid, std::uint64_t* uid);

}  // namespace cudapool::shim
