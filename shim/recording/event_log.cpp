// SPDX-License-Identifier: Apache-2.0
// shim/recording/event_log.cpp: see event_log.h.
#include "shim/recording/event_log.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "config/describe.h"
#include "log/format.h"
#include "log/logger.h"
#include "shim/driver/real_driver.h"
#include "shim/recording/loaded_modules.h"
#include "shim/recording/python_stack.h"
#include "shim/support/clock.h"
#include "shim/support/diagnostics.h"
#include "shim/support/exit_signals.h"
#include "shim/support/settings.h"

#ifndef CUDAPOOL_VERSION
#define CUDAPOOL_VERSION "0.0.0"
#endif

namespace cudapool::shim {

namespace {

std::atomic<log::Logger*> g_logger{nullptr};
std::atomic<bool> g_tried{false};
std::mutex g_start_mutex;

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

log::HeaderInfo header_info() {
  log::HeaderInfo h;
  h.version = CUDAPOOL_VERSION;
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) h.executable.assign(exe, static_cast<std::size_t>(n));
  const std::string cmdline = read_file("/proc/self/cmdline");
  for (std::size_t start = 0; start < cmdline.size();) {
    const std::size_t end = cmdline.find('\0', start);
    h.argv.push_back(cmdline.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  const ConfRecord& conf = conf_record();  // as read at initialization: not read again
  h.conf = conf.conf;
  h.conf_source = conf.variable;
  for (const config::EffectiveSetting& s : conf.settings) {
    h.options.emplace_back(s.name, log::setting_json(s));
  }
  // The devices, when the driver can name them (it is initialized by the first allocation).
  load_real_driver();  // the table stays empty when the process has no driver loaded
  const auto get_count = real().cuDeviceGetCount;
  const auto get_name = real().cuDeviceGetName;
  int count = 0;
  if (get_count != nullptr && get_count(&count) == CUDA_SUCCESS) {
    for (int d = 0; d < count; ++d) {
      log::DeviceInfo info;
      info.id = d;
      char name[256] = {};
      if (get_name != nullptr && get_name(name, sizeof name - 1, d) == CUDA_SUCCESS)
        info.name = name;
      size_t total = 0;
      if (real().cuDeviceTotalMem_v2 != nullptr &&
          real().cuDeviceTotalMem_v2(&total, d) == CUDA_SUCCESS) {
        info.total_memory = total;
      }
      h.devices.push_back(info);
    }
  }
  return h;
}

// The log's end action (support/exit_signals.h): at a handled signal, in _exit and before an exec.
void wait_for_log_at_exit_signal() {
  wait_for_log_before_exit(kExitStallMs);
}

// Its undo when an exec returned: a compressed log's frames stay open between writes again.
void resume_log_after_failed_exec() {
  log::Logger* l = g_logger.load(std::memory_order_acquire);
  if (l != nullptr) l->resume_after_exit_wait();
}

log::Logger* start_logger() {
  std::lock_guard<std::mutex> lock(g_start_mutex);
  if (g_tried.load(std::memory_order_relaxed)) return g_logger.load(std::memory_order_relaxed);
  log::Logger* logger = nullptr;
  if (!reporting().log_template.empty()) {
    const std::size_t capacity =
        reporting().log_buffer != 0 ? reporting().log_buffer : log::Ring::kDefaultCapacity;
    // The log's warnings are the shim's: through its diagnostics (CUDAPOOL_LOG_LEVEL).
    log::set_warning_sink([](std::string_view message) { say_text(Level::kWarn, message); });
    if (!reporting().compression_library.empty()) {
      log::set_compression_library(reporting().compression_library.c_str());
    }
    logger = log::Logger::start(
        reporting().log_template, header_info(), [](const char* name) { return std::getenv(name); },
        capacity);
  }
  g_logger.store(logger, std::memory_order_release);
  g_tried.store(true, std::memory_order_release);
  if (logger != nullptr) add_end_action(wait_for_log_at_exit_signal, resume_log_after_failed_exec);
  return logger;
}

log::Logger* logger() {
  if (g_tried.load(std::memory_order_acquire)) return g_logger.load(std::memory_order_acquire);
  if (reporting().log_template.empty()) return nullptr;
  return start_logger();
}

}  // namespace

std::uint64_t PoolLogSink::on_pool_event(const pool::PoolEvent& event) {
  log::Logger* l = logger();
  if (l == nullptr) return 0;
  log::LogRecord r = log::record_of(event);
  r.ctx = ctx_;
  r.tid = thread_id();
  r.t_ns = monotonic_ns();
  CallInfo& call = current_call();
  if (event.action == pool::Action::kAlloc || event.action == pool::Action::kFreeRequested) {
    if (call.start_ns != 0 && r.t_ns > call.start_ns) r.latency_ns = r.t_ns - call.start_ns;
  }
  if (event.action == pool::Action::kAlloc && call.frames > 0) {
    r.frames = call.frames;
    std::memcpy(r.backtrace, call.backtrace, sizeof r.backtrace);
  }
  if (event.action == pool::Action::kAlloc) r.python_stack = call.python_stack;
  if (event.action == pool::Action::kEmptyCache) {
    r.requested_by = static_cast<std::uint32_t>(call.requested_by);
  }
  if (event.action == pool::Action::kAllocFailed) r.error = event.error;
  return l->append(r);
}

CallInfo& current_call() {
  static thread_local CallInfo call;
  return call;
}

pool::EventSink* log_sink(PoolLogSink& own) {
  return reporting().log_template.empty() ? nullptr : &own;
}

bool logging() {
  return logger() != nullptr;
}

std::uint32_t take_python_stack() {
  if (reporting().python_frames <= 0) return 0;
  log::StackTable* table = python_stack_table();
  return table != nullptr ? capture_python_stack(*table, reporting().python_frames) : 0;
}

namespace {
// The Python stacks' table without a log (CUDAPOOL_OOM_SNAPSHOT alone): made at initialization,
// never freed.
std::atomic<log::StackTable*> g_own_stacks{nullptr};
}  // namespace

void make_python_stack_table() {
  if (reporting().python_frames > 0 && !reporting().oom_snapshot.empty() &&
      g_own_stacks.load(std::memory_order_acquire) == nullptr) {
    g_own_stacks.store(new log::StackTable, std::memory_order_release);
  }
}

log::StackTable* python_stack_table() {
  if (log::Logger* l = logger()) return &l->python_stacks();
  return g_own_stacks.load(std::memory_order_acquire);
}

// Never inlined: it skips its own frame and the hook's, which must be two real frames (inlined into
// the hook under LTO, it skipped the program's own caller instead; found by
// tests/cli/symbolized_frames.sh).
__attribute__((noinline)) void capture_backtrace(std::uint32_t python_stack) {
  CallInfo& call = current_call();
  call.frames = 0;
  call.python_stack = python_stack;
  const int want = reporting().backtrace_frames;
  if (want <= 0) return;
  void* frames[log::kMaxBacktrace + 2];
  // Skip this function and the hook itself.
  const int got = ::backtrace(frames, want + 2);
  int n = 0;
  for (int i = 2; i < got && n < want; ++i)
    call.backtrace[n++] = reinterpret_cast<std::uint64_t>(frames[i]);
  call.frames = static_cast<std::uint8_t>(n);
}

namespace {

// Library names of stream events, kept for the process's life (the log's writer formats them
// later): at most kCallers distinct ones, the rest share the last.
constexpr int kCallers = 128;
constexpr std::size_t kCallerBytes = 160;
char g_callers[kCallers][kCallerBytes];
int g_caller_count = 0;
std::mutex g_callers_mutex;

const char* intern_caller(const char* text) {
  std::lock_guard<std::mutex> lock(g_callers_mutex);
  for (int i = 0; i < g_caller_count; ++i) {
    if (std::strncmp(g_callers[i], text, kCallerBytes - 1) == 0) return g_callers[i];
  }
  if (g_caller_count == kCallers) return "(more callers)";
  char* slot = g_callers[g_caller_count++];
  std::strncpy(slot, text, kCallerBytes - 1);
  slot[kCallerBytes - 1] = '\0';
  return slot;
}

bool runtime_or_shim(const char* path) {
  const char* base = std::strrchr(path, '/');
  base = base != nullptr ? base + 1 : path;
  return std::strncmp(base, "libcudapool", 11) == 0 || std::strncmp(base, "libcudart", 9) == 0 ||
         std::strncmp(base, "libcuda.so", 10) == 0;
}

// The first caller outside the shim, the CUDA runtime and the driver: "library(symbol)" or the
// library alone (the executable when static cudart sits in it).
const char* find_caller() {
  void* frames[16];
  const int n = ::backtrace(frames, 16);
  for (int i = 1; i < n; ++i) {
    Dl_info info{};
    if (dladdr(frames[i], &info) == 0 || info.dli_fname == nullptr) continue;
    if (runtime_or_shim(info.dli_fname)) continue;
    const char* base = std::strrchr(info.dli_fname, '/');
    base = base != nullptr ? base + 1 : info.dli_fname;
    char text[kCallerBytes];
    if (info.dli_sname != nullptr) {
      std::snprintf(text, sizeof text, "%s(%s)", base, info.dli_sname);
    } else {
      std::snprintf(text, sizeof text, "%s", base);
    }
    return intern_caller(text);
  }
  return nullptr;
}

}  // namespace

void log_stream_event(log::LogAction action, std::uint64_t stream, std::uint64_t size,
                      const char* entry) {
  if (logger() == nullptr) return;
  CUdevice device = 0;
  if (real().cuCtxGetDevice != nullptr) real().cuCtxGetDevice(&device);
  log_event(action, device, 0, size, 0, stream, 0, 0, entry, find_caller());
}

void log_event(log::LogAction action, int device, std::uint64_t ptr, std::uint64_t size, int error,
               std::uint64_t stream, std::uint64_t latency_ns, std::uint8_t ctx, const char* entry,
               const char* caller) {
  log::Logger* l = logger();
  if (l == nullptr) return;
  log::LogRecord r;
  r.device = device;
  r.ctx = ctx;
  r.action = action;
  r.ptr = ptr;
  r.size = size;
  r.error = error;
  r.stream = stream;
  r.latency_ns = latency_ns;
  r.entry = entry;
  r.caller = caller;
  r.tid = thread_id();
  r.t_ns = monotonic_ns();  // the clock of the pool's events, not the Logger's fallback
  l->append(r);
}

void wait_for_log_before_exit(unsigned stall_ms) {
  if (log::Logger* l = g_logger.load(std::memory_order_acquire))
    l->wait_written_before_exit(stall_ms);
}

bool log_open() {
  return g_logger.load(std::memory_order_acquire) != nullptr;
}

namespace {

// A return address as "0x... library(symbol+0x...)", or "0x..." when no loaded object holds it.
std::string symbolized(std::uint64_t a) {
  Dl_info info{};
  char text[512];
  if (dladdr(reinterpret_cast<void*>(a), &info) != 0 && info.dli_fname != nullptr) {
    std::snprintf(text, sizeof text, "0x%llx %s(%s+0x%llx)", static_cast<unsigned long long>(a),
                  info.dli_fname, info.dli_sname != nullptr ? info.dli_sname : "?",
                  static_cast<unsigned long long>(
                      a - reinterpret_cast<std::uint64_t>(
                              info.dli_saddr != nullptr ? info.dli_saddr : info.dli_fbase)));
  } else {
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(a));
  }
  return text;
}

}  // namespace

void finish_log(log::Summary summary) {
  log::Logger* l = g_logger.load(std::memory_order_acquire);
  if (l == nullptr) return;
  // Symbolized here, at exit, never on the hot path.
  for (log::Leak& leak : summary.leaks) {
    for (std::uint64_t a : leak.frames) leak.symbols.push_back(symbolized(a));
  }
  if (reporting().backtrace_frames > 0) summary.modules = loaded_modules();
  if (reporting().python_frames > 0) summary.python_stacks = python_stack_counts();
  l->finish(summary);
}

void forget_log_after_fork() {
  log::Logger* l = g_logger.load(std::memory_order_acquire);
  if (l != nullptr) l->forget_after_fork();
  g_logger.store(nullptr, std::memory_order_release);
  g_tried.store(true, std::memory_order_release);
}

}  // namespace cudapool::shim
