// SPDX-License-Identifier: Apache-2.0
// shim/control/control.cpp: see control.h. The control thread is one poll() loop over a wake-up
// pipe, the listening socket and at most kMaxClients connections, each a small state machine:
// read one request line (at most kMaxRequest bytes, within kReadTimeout of the connection), answer
// it (control_commands.h: the pools are read under their locks and the answer made with no lock
// held), then write the answer without blocking (send with MSG_DONTWAIT | MSG_NOSIGNAL; a client
// that stops reading for kWriteStall, or takes longer than kWriteTotal, is dropped) and close.
// A hostile client costs the endpoint a slot for a second, never the program a stall: the thread
// holds no pool lock while it waits on a socket. All signals are blocked on the thread. The wake-up
// pipe carries two requests: stop (at exit), and make the socket and the metrics file again after
// an exec that failed (the exec hook removed them first, as a handled signal and _exit do: the end
// action below, support/exit_signals.h).
#include "shim/control/control.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "shim/control/control_commands.h"
#include "shim/control/control_socket.h"
#include "shim/control/metrics_file.h"
#include "shim/support/clock.h"
#include "shim/support/diagnostics.h"
#include "shim/support/exit_signals.h"
#include "shim/support/guard.h"
#include "shim/support/never_destroyed.h"
#include "shim/support/settings.h"

namespace cudapool::shim {

namespace {

constexpr int kMaxClients = 32;
constexpr std::size_t kMaxRequest = 4096;
constexpr std::uint64_t kMs = 1000000;
constexpr std::uint64_t kReadTimeout = 1000 * kMs;
constexpr std::uint64_t kWriteStall = 2000 * kMs;
constexpr std::uint64_t kWriteTotal = 30000 * kMs;
// How long the metrics file's removal waits for a write in progress.
constexpr unsigned kEndWaitMs = 1000;
// The wake-up pipe's requests.
constexpr char kStop = 's';
constexpr char kRemake = 'r';

struct ControlState {
  ControlEndpoint endpoint;
  RequestContext context;  // the endpoint's paths, for the answers
  // CUDAPOOL_METRICS's file (never deleted); atomic: the end action may read it at any time.
  std::atomic<log::RewrittenFile*> metrics{nullptr};
  int interval_s = 5;
};

// Constant-initialized and never destroyed: the shim may start before its static initializers
// ran, and the thread may still run while static destructors do.
constinit NeverDestroyed<ControlState> g_state;
constinit int g_wake[2] = {-1, -1};
constinit pthread_t g_thread{};
constinit std::atomic<bool> g_running{false};
constinit pid_t g_owner = 0;
// The connections' descriptors (fd + 1; 0: none), for a fork child to close: a client must see
// its connection end when the parent closes it.
constinit std::atomic<int> g_client_fds[kMaxClients] = {};
// The socket file's name and identity, for its removal at the process's end, which a signal
// handler, _exit or an exec runs (control_before_end): characters and atomics only. A zero inode:
// nothing to remove.
constinit char g_socket_path[sizeof(sockaddr_un::sun_path)] = {};
constinit std::atomic<std::uint64_t> g_socket_dev{0}, g_socket_ino{0};

void publish_socket(const ControlEndpoint& e) {
  if (e.listen_fd < 0 || e.path.size() >= sizeof g_socket_path) return;
  std::memcpy(g_socket_path, e.path.c_str(), e.path.size() + 1);
  g_socket_dev.store(e.dev);
  g_socket_ino.store(e.ino);
}

struct Client {
  int fd = -1;
  std::uint64_t pid = 0;
  std::string in, out;
  std::size_t sent = 0;
  bool answering = false;
  std::uint64_t deadline = 0;  // reading: the request's; writing: the next progress's
  std::uint64_t hard_deadline = 0;
};

void close_client(Client& c, int slot) {
  g_client_fds[slot].store(0, std::memory_order_relaxed);
  ::close(c.fd);
  c = Client{};
}

void start_answer(Client& c, std::string answer, std::uint64_t now) {
  c.out = std::move(answer);
  c.sent = 0;
  c.answering = true;
  c.deadline = now + kWriteStall;
  c.hard_deadline = now + kWriteTotal;
}

// Reads what arrived; answers once a line (or the end of the input) completes the request.
// Returns false when the connection is to be closed.
bool read_request(Client& c, std::uint64_t now) {
  char buf[kMaxRequest + 1];
  const ssize_t n = ::recv(c.fd, buf, kMaxRequest + 1 - c.in.size(), MSG_DONTWAIT);
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  if (n > 0) c.in.append(buf, static_cast<std::size_t>(n));
  const std::size_t newline = c.in.find('\n');
  if (newline == std::string::npos && c.in.size() > kMaxRequest) {
    start_answer(c, "error: a request is one line of at most 4096 bytes\n", now);
    return true;
  }
  if (newline == std::string::npos && n > 0) return true;
  if (newline == std::string::npos && c.in.empty()) return false;  // closed without a request
  const std::string request = c.in.substr(0, newline);
  RequestContext context = g_state.get().context;
  context.peer_pid = c.pid;
  start_answer(c, answer_request(request, context), monotonic_ns());
  return true;
}

// Writes what the socket takes now. Returns false when done or failed (close).
bool write_answer(Client& c, std::uint64_t now) {
  while (c.sent < c.out.size()) {
    const ssize_t n =
        ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<std::size_t>(n);
      c.deadline = now + kWriteStall;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
  return false;
}

void accept_clients(Client* clients) {
  const int listen_fd = g_state.get().endpoint.listen_fd;
  for (int slot = 0; slot < kMaxClients; ++slot) {
    if (clients[slot].fd >= 0) continue;
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    std::uint64_t pid = 0, uid = 0;
    if (!peer_is_owner(fd, &pid, &uid)) {
      CUDAPOOL_WARN_ONCE("control socket: a connection from uid %llu refused (not this user)",
                         static_cast<unsigned long long>(uid));
      ::close(fd);
      --slot;  // the slot is still free
      continue;
    }
    g_client_fds[slot].store(fd + 1, std::memory_order_relaxed);
    clients[slot].fd = fd;
    clients[slot].pid = pid;
    clients[slot].deadline = monotonic_ns() + kReadTimeout;
  }
}

void write_metrics_now() {
  std::string why;
  switch (write_metrics_file(*g_state.get().metrics.load(), &why)) {
    case log::RewrittenFile::Outcome::kFailed:
      CUDAPOOL_WARN_ONCE("CUDAPOOL_METRICS: %s (warned once; the next writes are tried anyway)",
                         why.c_str());
      break;
    case log::RewrittenFile::Outcome::kStopped:
      warn("CUDAPOOL_METRICS: %s; the metrics file is not written from now on", why.c_str());
      break;
    default:
      break;
  }
}

// What the wake-up pipe holds: kStop when it asks to stop (or its writing end closed), else
// kRemake or 0.
char read_wake() {
  char request = 0, buf[64];
  ssize_t n;
  while ((n = ::read(g_wake[0], buf, sizeof buf)) > 0) {
    for (ssize_t i = 0; i < n; ++i) {
      if (request != kStop) request = buf[i];
    }
  }
  return n == 0 ? kStop : request;
}

// After an exec that failed (control_after_failed_exec): the socket made again (its name was
// removed before the exec; the old listening socket goes with its queue).
void remake_socket() {
  ControlState& state = g_state.get();
  if (state.context.socket_path.empty()) return;
  g_socket_ino.store(0);
  remove_endpoint(state.endpoint);
  std::string why;
  if (open_endpoint(reporting().control, &state.endpoint, &why)) {
    publish_socket(state.endpoint);
  } else {
    warn("CUDAPOOL_CONTROL=%s: after an exec that failed: %s: no control socket",
         reporting().control.c_str(), why.c_str());
  }
}

void* control_main(void*) {
  ReentrancyGuard guard;  // a hook reached from this thread passes straight through
  ControlState& state = g_state.get();
  Client clients[kMaxClients];
  log::RewrittenFile* const metrics_file = state.metrics.load();
  const bool metrics = metrics_file != nullptr;
  const std::uint64_t interval = static_cast<std::uint64_t>(state.interval_s) * 1000 * kMs;
  std::uint64_t next_metrics = monotonic_ns();
  for (;;) {
    std::uint64_t now = monotonic_ns();
    if (metrics && now >= next_metrics) {
      if (!metrics_file->stopped()) write_metrics_now();
      now = monotonic_ns();
      next_metrics = now + interval;
    }
    pollfd fds[2 + kMaxClients];
    int slot_of[2 + kMaxClients];
    int n = 0, free_slots = 0;
    fds[n++] = pollfd{g_wake[0], POLLIN, 0};
    std::uint64_t wake_at = metrics ? next_metrics : ~std::uint64_t{0};
    for (int slot = 0; slot < kMaxClients; ++slot) {
      Client& c = clients[slot];
      if (c.fd < 0) {
        ++free_slots;
        continue;
      }
      slot_of[n] = slot;
      fds[n++] = pollfd{c.fd, static_cast<short>(c.answering ? POLLOUT : POLLIN), 0};
      wake_at = std::min(wake_at, std::min(c.deadline, c.answering ? c.hard_deadline : c.deadline));
    }
    const int listen_index = state.endpoint.listen_fd >= 0 && free_slots > 0 ? n : -1;
    if (listen_index >= 0) fds[n++] = pollfd{state.endpoint.listen_fd, POLLIN, 0};
    const int timeout_ms =
        wake_at == ~std::uint64_t{0}
            ? -1
            : static_cast<int>(wake_at > now ? (wake_at - now + kMs - 1) / kMs : 0);
    if (::poll(fds, static_cast<nfds_t>(n), timeout_ms) < 0 && errno != EINTR) {
      timespec pause{0, 100 * 1000 * 1000};
      nanosleep(&pause, nullptr);
      continue;
    }
    if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
      if (read_wake() == kStop) break;
      remake_socket();
      next_metrics = monotonic_ns();  // and the metrics file written anew at once
      continue;
    }
    now = monotonic_ns();
    for (int i = 1; i < n; ++i) {
      if (i == listen_index) continue;
      Client& c = clients[slot_of[i]];
      bool keep = true;
      if (fds[i].revents != 0) {
        keep = c.answering ? write_answer(c, now) : read_request(c, now);
        if (keep && c.answering && c.sent == 0) keep = write_answer(c, monotonic_ns());
      }
      now = monotonic_ns();
      if (keep && (now >= c.deadline || (c.answering && now >= c.hard_deadline))) {
        if (!c.answering) {
          static constexpr char kLate[] = "error: no request within 1 s\n";
          ::send(c.fd, kLate, sizeof kLate - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        keep = false;
      }
      if (!keep) close_client(c, slot_of[i]);
    }
    if (listen_index >= 0 && (fds[listen_index].revents & POLLIN) != 0) accept_clients(clients);
  }
  for (int slot = 0; slot < kMaxClients; ++slot) {
    if (clients[slot].fd >= 0) close_client(clients[slot], slot);
  }
  return nullptr;
}

void close_after_fork_child() {
  if (!g_running.load(std::memory_order_relaxed)) return;
  g_running.store(false, std::memory_order_relaxed);  // the child has no control thread
  forget_endpoint_after_fork(g_state.get().endpoint);
  for (std::atomic<int>& fd : g_client_fds) {
    const int v = fd.exchange(0, std::memory_order_relaxed);
    if (v > 0) ::close(v - 1);
  }
  ::close(g_wake[0]);
  ::close(g_wake[1]);
  g_wake[0] = g_wake[1] = -1;
}

// The end action (support/exit_signals.h): at a handled signal, in _exit and before an exec, in the
// process that made them only, the socket's name and the metrics file removed, each only while it
// is still this process's own. Armed before either exists. Async-signal-safe; the control thread
// runs on (an exec may fail).
void control_before_end() {
  if (::getpid() != g_owner) return;
  if (const std::uint64_t ino = g_socket_ino.exchange(0)) {
    unlink_socket_if_same(g_socket_path, g_socket_dev.load(), ino);
  }
  if (log::RewrittenFile* metrics = g_state.get().metrics.load()) metrics->remove(kEndWaitMs);
}

// Its undo when an exec returned: the control thread makes the socket and the metrics file
// again. Async-signal-safe.
void control_after_failed_exec() {
  if (::getpid() != g_owner || !g_running.load(std::memory_order_acquire)) return;
  if (log::RewrittenFile* metrics = g_state.get().metrics.load()) metrics->reopen();
  (void)!::write(g_wake[1], &kRemake, 1);
}

}  // namespace

void start_control() {
  const Reporting& r = reporting();
  ControlState& state = g_state.get();
  std::string why;
  const bool control_off = r.control.empty() || r.control == "0" || r.control == "false" ||
                           r.control == "False" || r.control == "no" || r.control == "off";
  if (control_off && r.metrics_template.empty()) return;
  // The removal at the process's end is armed before the files exist (it takes only what was made).
  g_owner = ::getpid();
  add_end_action(control_before_end, control_after_failed_exec);
  if (!control_off) {
    if (open_endpoint(r.control, &state.endpoint, &why)) {
      publish_socket(state.endpoint);
      state.context.socket_path = state.endpoint.path;
      say(Level::kInfo, "control socket: %s", state.endpoint.path.c_str());
    } else {
      warn("CUDAPOOL_CONTROL=%s: %s: no control socket", r.control.c_str(), why.c_str());
    }
  }
  if (!r.metrics_template.empty()) {
    const std::string path = metrics_path(r.metrics_template, &why);
    if (path.empty()) {
      warn("%s: no metrics file", why.c_str());
    } else {
      state.metrics.store(new log::RewrittenFile(path));  // lives as long as the process
      state.interval_s = r.metrics_interval_s;
      state.context.metrics_path = path;
      state.context.metrics_interval_s = state.interval_s;
    }
  }
  if (state.endpoint.listen_fd < 0 && state.metrics.load() == nullptr) return;
  if (::pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) {
    warn("control thread: pipe: %s", std::strerror(errno));
    g_socket_ino.store(0);
    remove_endpoint(state.endpoint);
    return;
  }
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);  // the thread takes no signal of the program's
  const int rc = pthread_create(&g_thread, nullptr, control_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (rc != 0) {
    warn("control thread: pthread_create: %s", std::strerror(rc));
    g_socket_ino.store(0);
    remove_endpoint(state.endpoint);
    return;
  }
  // Named by its creator, so the name is there before anyone can see the thread work (in top,
  // ps -L, /proc/PID/task/*/comm), as the log's writer is cudapool-log.
  pthread_setname_np(g_thread, "cudapool-ctl");
  g_running.store(true, std::memory_order_release);
  pthread_atfork(nullptr, nullptr, close_after_fork_child);
  std::atexit(stop_control);
}

void stop_control() {
  if (::getpid() != g_owner || !g_running.exchange(false, std::memory_order_acq_rel)) return;
  (void)!::write(g_wake[1], &kStop, 1);
  timespec limit{};
  clock_gettime(CLOCK_REALTIME, &limit);
  limit.tv_sec += 2;
  const bool joined = pthread_timedjoin_np(g_thread, nullptr, &limit) == 0;
  ControlState& state = g_state.get();
  g_socket_ino.store(0);
  remove_endpoint(state.endpoint);
  // Waits (bounded) for a write the thread, not joined, may still be making.
  if (log::RewrittenFile* metrics = state.metrics.load()) metrics->remove(kEndWaitMs);
  if (!joined) warn("control thread: still busy at exit after 2 s; leaving it");
}

}  // namespace cudapool::shim
