// SPDX-License-Identifier: Apache-2.0
// bench/training_log/process.cpp: see process.h.
#include "bench/training_log/process.h"

#include <charconv>
#include <cstring>
#include <stdexcept>

#include "config/describe.h"
#include "log/format.h"
#include "tools/replay/replayer.h"

namespace cudapool::bench {

namespace {

// The simulated clocks: the wall clock and CLOCK_MONOTONIC at the start (as a shim log of
// 2026-12-02 had them), and the first CUDA call's time after it.
constexpr std::uint64_t kStartUnixNs = 1796180174060086960ull;
constexpr std::uint64_t kStartMonotonicNs = 900200933821ull;
constexpr std::uint64_t kFirstCallNs = 18000000;
constexpr std::uint64_t kExitNs = 50000000;  // from the last call to the summary line
// The mean time between two calls of the program (the CPU issuing kernels), and the cost of a
// call as the shim measures it (latency_ns): a cache hit (more with backtraces: backtrace() is
// the most of it), a free, the driver's cudaMalloc and cudaFree of a segment.
constexpr std::uint64_t kCallGapNs = 30000;
constexpr std::uint64_t kHitNs = 500, kHitWithBacktraceNs = 4000;
constexpr std::uint64_t kFreeNs = 250, kCompleteNs = 150;
std::uint64_t device_alloc_ns(std::uint64_t bytes) {
  return 150000 + bytes / 65536 * 1000;
}
std::uint64_t device_free_ns(std::uint64_t bytes) {
  return 60000 + bytes / 262144 * 1000;
}
// cuBLAS's stream (its handle as the program would pass it) and its library.
constexpr std::uint64_t kBlasStream = 0x5581c8a3f7e0;
constexpr const char* kBlasLibrary = "libcublasLt.so.13";

char* put(char* p, const char* text) {
  const std::size_t n = std::strlen(text);
  std::memcpy(p, text, n);
  return p + n;
}
char* put_u64(char* p, std::uint64_t v) {
  return std::to_chars(p, p + 20, v).ptr;
}
char* put_hex(char* p, std::uint64_t v) {
  p = put(p, "\"0x");
  p = std::to_chars(p, p + 16, v, 16).ptr;
  *p++ = '"';
  return p;
}

}  // namespace

SimulatedProcess::SimulatedProcess(const ProcessSettings& settings,
                                   const config::ParseResult& parsed, Output& out)
    : settings_(settings),
      out_(out),
      rng_(settings.seed ^ 0x7f4a7c159e3779b9ull),
      // Full logs: the driver's kind of addresses (segments come down from 0x7ff000000000, the
      // middle of the range). Requests only: the replay's first pool's range, where the replay
      // (given no segment addresses) places the same segments.
      backend_(kDeviceMemory,
               settings.requests_only ? replay::kPoolSpaceBase : std::uintptr_t{0x77f000000000},
               settings.requests_only ? replay::kPoolSpan : std::uintptr_t{1} << 44),
      pool_(parsed.options, backend_, 0, this) {
  backend_.place_like_the_driver(true);
  log::HeaderInfo h;
  h.version = settings.version;
  h.host = "generated";
  h.executable = "make_training_log";
  h.argv = settings.argv;
  h.pid = kPid;
  h.start_unix_ns = kStartUnixNs;
  h.start_t_ns = kStartMonotonicNs;
  h.conf = settings.conf;
  h.conf_source = settings.conf.empty() ? "" : "CUDAPOOL_CONF";
  // The effective options are the shim's (a requests-only log was written by no pool: none, and
  // then the replay knows its frees were never held behind a reuse fence).
  if (!settings.requests_only) {
    for (const config::EffectiveSetting& s : config::describe(parsed)) {
      h.options.emplace_back(s.name, log::setting_json(s));
    }
  }
  h.devices.push_back(log::DeviceInfo{0, kDeviceName, kDeviceMemory});
  out_.write(log::format_header(h));
  now_ = kStartMonotonicNs + kFirstCallNs;
}

std::uintptr_t SimulatedProcess::alloc(std::size_t bytes, Site site, Thread thread,
                                       Lifetime lifetime) {
  now_ += rng_.around(kCallGapNs);
  call_start_ = now_;
  thread_ = thread;
  site_ = site;
  const pool::AllocResult r = pool_.malloc(bytes, 0, pool::AllocTag{0, 0, tid(thread)});
  if (r.status != pool::AllocStatus::kOk) {
    throw std::runtime_error("the simulated " + std::string(kDeviceName) + " (" +
                             std::to_string(kDeviceMemory) + " bytes) ran out of memory for " +
                             std::to_string(bytes) + " bytes after " + std::to_string(seq_) +
                             " events: choose a smaller model (--layers, --hidden, --batch, "
                             "--seq, --vocab) or other --conf settings");
  }
  if (lifetime == Lifetime::kKept) kept_[r.ptr] = Kept{alloc_seq_, alloc_t_ns_, tid(thread), site};
  return r.ptr;
}

void SimulatedProcess::free(std::uintptr_t ptr, Thread thread) {
  now_ += rng_.around(kCallGapNs);
  call_start_ = now_;
  thread_ = thread;
  if (pool_.free(ptr) != pool::FreeStatus::kOk) {
    throw std::logic_error("the workload freed a pointer it does not hold");
  }
}

void SimulatedProcess::library_stream(Thread thread) {
  if (settings_.requests_only) return;
  for (const bool first_work : {false, true}) {
    log::LogRecord r;
    r.action = first_work ? log::LogAction::kStreamFirstWork : log::LogAction::kStreamCreated;
    r.size = first_work ? 2 : 0;
    r.stream = kBlasStream;
    r.entry = first_work ? "cuOccupancyMaxActiveClusters" : "cuStreamCreate";
    r.caller = kBlasLibrary;
    now_ += rng_.around(kCallGapNs);
    r.t_ns = now_;
    r.tid = tid(thread);
    r.seq = ++seq_;
    out_.wrote(log::format_event(r, out_.reserve(log::kMaxEventLine), log::kMaxEventLine));
  }
}

std::uint64_t SimulatedProcess::on_pool_event(const pool::PoolEvent& event) {
  switch (event.action) {
    case pool::Action::kSegmentAlloc:
    case pool::Action::kSegmentMap:
      now_ += device_alloc_ns(event.size);
      break;
    case pool::Action::kSegmentFree:
    case pool::Action::kSegmentUnmap:
      now_ += device_free_ns(event.size);
      break;
    case pool::Action::kAlloc:
      now_ += rng_.around(settings_.backtrace > 0 ? kHitWithBacktraceNs : kHitNs);
      break;
    case pool::Action::kFreeRequested:
      now_ += rng_.around(kFreeNs);
      break;
    case pool::Action::kFreeCompleted:
      now_ += rng_.around(kCompleteNs);
      break;
    default:
      now_ += rng_.around(2000);
  }
  const bool alloc = event.action == pool::Action::kAlloc;
  const bool request = alloc || event.action == pool::Action::kFreeRequested;
  if (settings_.requests_only && !request) return 0;
  log::LogRecord r = log::record_of(event);
  r.seq = ++seq_;
  r.t_ns = now_;
  r.tid = tid(thread_);
  if (request) r.latency_ns = now_ - call_start_;
  if (alloc) {
    alloc_seq_ = r.seq;
    alloc_t_ns_ = r.t_ns;
    if (settings_.backtrace > 0) {
      r.frames = static_cast<std::uint8_t>(settings_.backtrace);
      std::memcpy(r.backtrace, sites_.frames(site_), sizeof(std::uint64_t) * r.frames);
    }
  }
  if (settings_.requests_only) {
    write_request(r);
    return r.seq;
  }
  out_.wrote(log::format_event(r, out_.reserve(log::kMaxEventLine), log::kMaxEventLine));
  return r.seq;
}

// {"seq":N,"t_ns":N,"tid":N,"dev":0,"action":"alloc","ptr":"0x...","size":N} and the backtrace.
void SimulatedProcess::write_request(const log::LogRecord& r) {
  char* const start = out_.reserve(log::kMaxEventLine);
  char* p = put(start, "{\"seq\":");
  p = put_u64(p, r.seq);
  p = put(p, ",\"t_ns\":");
  p = put_u64(p, r.t_ns);
  p = put(p, ",\"tid\":");
  p = put_u64(p, r.tid);
  p = put(p, r.action == log::LogAction::kAlloc
                 ? ",\"dev\":0,\"action\":\"alloc\",\"ptr\":"
                 : ",\"dev\":0,\"action\":\"free_requested\",\"ptr\":");
  p = put_hex(p, r.ptr);
  p = put(p, ",\"size\":");
  p = put_u64(p, r.size);
  if (r.frames > 0) {
    p = put(p, ",\"backtrace\":[");
    for (std::size_t i = 0; i < r.frames; ++i) {
      if (i > 0) *p++ = ',';
      p = put_hex(p, r.backtrace[i]);
    }
    *p++ = ']';
  }
  p = put(p, "}\n");
  out_.wrote(static_cast<std::size_t>(p - start));
}

void SimulatedProcess::finish() {
  now_ += kExitNs;
  log::Summary s;
  s.seq = seq_ + 1;
  s.t_ns = now_;
  s.events = seq_;
  s.devices.emplace_back(0, pool_.stats());
  pool_.for_each_block([&](const pool::Block& b) {
    if (!b.allocated) return;
    log::Leak leak;
    leak.ptr = b.ptr;
    leak.size = b.requested_size;
    leak.block_size = b.size;
    if (const auto it = kept_.find(b.ptr); it != kept_.end()) {
      leak.seq = it->second.seq;
      leak.t_ns = it->second.t_ns;
      leak.tid = it->second.tid;
      const std::uint64_t* frames = sites_.frames(it->second.site);
      for (int i = 0; i < settings_.backtrace; ++i) {
        leak.frames.push_back(frames[i]);
        leak.symbols.push_back(sites_.symbol(frames[i]));
      }
    }
    s.leaks.push_back(std::move(leak));
  });
  if (settings_.backtrace > 0) s.modules = sites_.modules();
  out_.write(log::format_summary(s));
}

}  // namespace cudapool::bench
