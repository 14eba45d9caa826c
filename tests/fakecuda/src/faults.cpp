// SPDX-License-Identifier: Apache-2.0
// tests/fakecuda/src/faults.cpp: fault injection into the fake driver's entry points (failed and
// slow calls), and its exit report. Not a model of how a real driver fails: a failed call has no
// effect (but a synchronize, which reports the failure of the work it waited for, fails after its
// wait: FAKECUDA_WAIT_ENTRY) and nothing stays broken after it; the choice of error per entry point
// is (default_error). Nor of how long a real call takes: a slow call only sleeps first.
//
//   FAKECUDA_FAIL="name:N[:ERROR][,name:N[:ERROR]...]"  call number N of exported entry point
//       `name` (counted as fakecuda_calls counts: since the start or since the last
//       fakecuda_reset_counters) fails with ERROR, a CUDA_ERROR_* name or a number; without one,
//       with default_error(name). Each fault fires once. A bad entry stops the process (exit 2).
//   Each fault that fires says so on stderr ("fakecuda: call N of NAME fails with ERROR"), with a
//   backtrace when FAKECUDA_FAIL_TRACE=1.
//   FAKECUDA_FAIL_FROM_RESET=1  no fault fires before the program's first fakecuda_reset_counters
//       (the calls of its setup stay clean; N then counts from that reset).
//   FAKECUDA_COUNT_CALLS=path  at exit (library destructor; not after _exit or a crash), writes
//       "calls NAME COUNT" per entry point called, "fault NAME N ERROR fired|armed" per fault
//       of FAKECUDA_FAIL, and "outstanding KIND COUNT BYTES" for what is still allocated
//       (allocations, physical = cuMemCreate handles not destroyed, mappings, reservations) and
//       the streams and events not destroyed, so a test can count calls, then sweep N.
//   FAKECUDA_SLOW="name:MS[,name:MS...]"  every call of exported entry point `name` sleeps MS
//       milliseconds (1 to 60000) after it is counted and before it does anything, without the
//       driver's lock (state.cpp, slow_call): other threads' calls meanwhile see the state from
//       before it (a cuMemUnmap's mapping still there). A call failed by a fault does not sleep. A
//       bad entry stops the process (exit 2).
// fakecuda_fail_call (fakecuda_control.h) arms one fault from the program.
#include <execinfo.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <utility>
#include <vector>

#include "fakecuda_control.h"
#include "state.h"

namespace fakecuda {
namespace {

struct Fault {
  std::string name;
  unsigned long long n = 0;     // FAKECUDA_FAIL: the call's number
  unsigned long long left = 0;  // fakecuda_fail_call: calls to go, this one included
  bool from_env = true;
  CUresult error = CUDA_SUCCESS;
  bool fired = false;
};

struct Faults {
  bool loaded = false;
  bool armed = true;  // false until the first reset with FAKECUDA_FAIL_FROM_RESET
  std::vector<Fault> list;
  std::vector<std::pair<std::string, unsigned>> slow;  // FAKECUDA_SLOW: name, milliseconds
  unsigned long long fired = 0;
  CUresult last = CUDA_SUCCESS;
  std::string report_path;
  pid_t pid = 0;
};

Faults& F() {
  static Faults* faults = new Faults();  // never destroyed: the report runs in a destructor
  return *faults;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// What a real driver plausibly answers when this entry point fails on its own.
CUresult default_error(std::string_view name) {
  for (std::string_view suffix : {"_ptsz", "_ptds"}) {
    if (name.size() > suffix.size() && name.substr(name.size() - suffix.size()) == suffix) {
      name.remove_suffix(suffix.size());
    }
  }
  // Allocations and creations: out of memory.
  for (std::string_view p :
       {"cuMemAlloc", "cuMemHostAlloc", "cuMemCreate", "cuMemMap", "cuMemSetAccess",
        "cuMemAddressReserve", "cuEventCreate", "cuStreamCreate", "cuGreenCtxStreamCreate",
        "cuCtxCreate", "cuDevicePrimaryCtxRetain"}) {
    if (starts_with(name, p)) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  // Queries of asynchronous work: not ready (always a possible answer).
  if (name == "cuEventQuery" || name == "cuStreamQuery") return CUDA_ERROR_NOT_READY;
  // Calls that queue work or wait for it report an earlier kernel's failure.
  for (std::string_view p :
       {"cuEventRecord", "cuStreamWaitEvent", "cuEventSynchronize", "cuStreamSynchronize",
        "cuCtxSynchronize", "cuMemset", "cuMemcpy", "cuLaunch", "cuMemFree_v2", "cuMemFreeAsync"}) {
    if (starts_with(name, p)) return CUDA_ERROR_LAUNCH_FAILED;
  }
  if (name == "cuStreamDestroy_v2" || name == "cuStreamDestroy" || name == "cuEventDestroy_v2" ||
      name == "cuEventDestroy") {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  return CUDA_ERROR_INVALID_VALUE;
}

[[noreturn]] void bad_spec(const std::string& entry, const char* why,
                           const char* variable = "FAKECUDA_FAIL") {
  std::fprintf(stderr, "fakecuda: %s entry '%s': %s\n", variable, entry.c_str(), why);
  std::_Exit(2);
}

Fault parse_fault(const std::string& entry) {
  Fault f;
  const size_t first = entry.find(':');
  if (first == std::string::npos || first == 0) bad_spec(entry, "want name:N[:ERROR]");
  f.name = entry.substr(0, first);
  const size_t second = entry.find(':', first + 1);
  const std::string n =
      entry.substr(first + 1, second == std::string::npos ? std::string::npos : second - first - 1);
  char* end = nullptr;
  errno = 0;
  f.n = std::strtoull(n.c_str(), &end, 10);
  if (n.empty() || *end != '\0' || errno != 0 || f.n == 0) bad_spec(entry, "N must be 1 or more");
  f.error = default_error(f.name);
  if (second != std::string::npos) {
    const std::string error = entry.substr(second + 1);
    if (!error_from_name(error, &f.error)) {
      long code = std::strtol(error.c_str(), &end, 10);
      if (error.empty() || *end != '\0' || code <= 0) bad_spec(entry, "unknown error");
      f.error = static_cast<CUresult>(code);
    }
  }
  return f;
}

std::pair<std::string, unsigned> parse_slow(const std::string& entry) {
  const size_t colon = entry.find(':');
  if (colon == std::string::npos || colon == 0) bad_spec(entry, "want name:MS", "FAKECUDA_SLOW");
  const std::string ms = entry.substr(colon + 1);
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(ms.c_str(), &end, 10);
  if (ms.empty() || *end != '\0' || errno != 0 || v == 0 || v > 60000) {
    bad_spec(entry, "MS must be 1 to 60000", "FAKECUDA_SLOW");
  }
  return {entry.substr(0, colon), static_cast<unsigned>(v)};
}

// Calls fn on each non-empty entry of a comma-separated list.
template <class Fn>
void for_each_entry(const char* spec, Fn&& fn) {
  const std::string text = spec;
  size_t at = 0;
  while (at <= text.size()) {
    size_t comma = text.find(',', at);
    if (comma == std::string::npos) comma = text.size();
    const std::string entry = text.substr(at, comma - at);
    if (!entry.empty()) fn(entry);
    at = comma + 1;
  }
}

void load() {
  Faults& faults = F();
  faults.loaded = true;
  faults.pid = getpid();
  if (const char* path = std::getenv("FAKECUDA_COUNT_CALLS"); path != nullptr && *path != '\0') {
    faults.report_path = path;
  }
  const char* from_reset = std::getenv("FAKECUDA_FAIL_FROM_RESET");
  faults.armed = from_reset == nullptr || std::strcmp(from_reset, "1") != 0;
  if (const char* spec = std::getenv("FAKECUDA_FAIL"); spec != nullptr) {
    for_each_entry(spec, [&](const std::string& e) { faults.list.push_back(parse_fault(e)); });
  }
  if (const char* spec = std::getenv("FAKECUDA_SLOW"); spec != nullptr) {
    for_each_entry(spec, [&](const std::string& e) { faults.slow.push_back(parse_slow(e)); });
  }
}

CUresult fire(Fault& f, unsigned long long count) {
  f.fired = true;
  ++F().fired;
  F().last = f.error;
  const char* error = error_name(f.error);
  std::fprintf(stderr, "fakecuda: call %llu of %s fails with %s (injected)\n", count,
               f.name.c_str(), error != nullptr ? error : std::to_string(f.error).c_str());
  if (const char* trace = std::getenv("FAKECUDA_FAIL_TRACE"); trace != nullptr && *trace == '1') {
    void* frames[32];
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
  }
  return f.error;
}

}  // namespace

CUresult injected_fault(std::string_view name, unsigned long long count) {
  Faults& faults = F();
  if (!faults.loaded) load();
  if (faults.list.empty()) return CUDA_SUCCESS;
  for (Fault& f : faults.list) {
    if (f.fired || f.name != name) continue;
    if (f.from_env ? faults.armed && count == f.n : --f.left == 0) return fire(f, count);
  }
  return CUDA_SUCCESS;
}

unsigned slow_call_ms(std::string_view name) {
  Faults& faults = F();
  if (!faults.loaded) load();
  for (const auto& [slow, ms] : faults.slow) {
    if (slow == name) return ms;
  }
  return 0;
}

void faults_counters_reset() {
  Faults& faults = F();
  if (!faults.loaded) load();
  faults.armed = true;
}

}  // namespace fakecuda

using namespace fakecuda;

namespace {

// The report at exit, in the process that read the environment (not in a forked child).
__attribute__((destructor)) void write_report() {
  Faults& faults = F();
  if (!faults.loaded || faults.report_path.empty() || faults.pid != getpid()) return;
  // Another thread may still hold the lock at exit: wait a little, then read without it.
  timespec until{};
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 1;
  const bool locked = pthread_mutex_timedlock(&S().mu, &until) == 0;
  if (FILE* out = std::fopen(faults.report_path.c_str(), "w")) {
    for (const auto& [name, count] : S().calls)
      std::fprintf(out, "calls %s %llu\n", name.c_str(), count);
    for (const Fault& f : faults.list) {
      if (!f.from_env) continue;
      const char* error = error_name(f.error);
      std::fprintf(out, "fault %s %llu %s %s\n", f.name.c_str(), f.n,
                   error != nullptr ? error : std::to_string(f.error).c_str(),
                   f.fired ? "fired" : "armed");
    }
    size_t bytes = 0;
    for (const auto& [base, a] : S().allocations) bytes += a.size;
    std::fprintf(out, "outstanding allocations %zu %zu\n", S().allocations.size(), bytes);
    bytes = 0;
    for (const auto& [id, h] : S().handles) bytes += h.size;
    std::fprintf(out, "outstanding physical %zu %zu\n", S().handles.size(), bytes);
    bytes = 0;
    for (const auto& [base, m] : S().mappings) bytes += m.size;
    std::fprintf(out, "outstanding mappings %zu %zu\n", S().mappings.size(), bytes);
    bytes = 0;
    for (const auto& [base, size] : S().reservations) bytes += size;
    std::fprintf(out, "outstanding reservations %zu %zu\n", S().reservations.size(), bytes);
    std::fprintf(out, "outstanding streams %zu 0\n", S().streams.size());
    std::fprintf(out, "outstanding events %zu 0\n", S().events.size());
    std::fclose(out);
  }
  if (locked) pthread_mutex_unlock(&S().mu);
}

}  // namespace

extern "C" {

unsigned long long fakecuda_faults_fired(void) {
  Lock lock;
  return F().fired;
}

CUresult fakecuda_last_fault(void) {
  Lock lock;
  return F().last;
}

int fakecuda_fail_call(const char* name, unsigned long long nth, CUresult error) {
  if (name == nullptr || *name == '\0' || nth == 0) return -1;
  Lock lock;
  Faults& faults = F();
  if (!faults.loaded) load();
  Fault f;
  f.name = name;
  f.left = nth;
  f.from_env = false;
  f.error = error != CUDA_SUCCESS ? error : default_error(name);
  faults.list.push_back(f);
  return 0;
}

}  // extern "C"
