// SPDX-License-Identifier: Apache-2.0
// shim/control/control_commands.cpp: see control_commands.h.
#include "shim/control/control_commands.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <vector>

#include "log/json_text.h"
#include "pool/bytes_text.h"
#include "pool/summary.h"
#include "shim/control/control_json.h"
#include "shim/control/prometheus_text.h"
#include "shim/pools/context_registry.h"
#include "shim/pools/stream_capture.h"
#include "shim/pools/thread_cache.h"
#include "shim/recording/event_log.h"
#include "shim/reports/pool_readings.h"
#include "shim/support/settings.h"

#ifndef CUDAPOOL_VERSION
#define CUDAPOOL_VERSION "0.0.0"
#endif

namespace cudapool::shim {

namespace {

constexpr const char* kKnown = "ping, stats, stats json, prometheus, empty-cache, snapshot, help";

std::string printf_text(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string printf_text(const char* format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof buf, format, args);
  va_end(args);
  return buf;
}

std::string stats_text(const std::vector<DeviceReading>& devices, const RequestContext& context) {
  const ConfRecord& conf = conf_record();
  std::string out = printf_text("cudapool stats: pid %d, shim running for %.1f s\n",
                                static_cast<int>(::getpid()), unix_now_s() - shim_start_unix_s());
  if (conf.variable.empty()) {
    out +=
        "settings: the defaults (no CUDAPOOL_CONF, PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF)\n";
  } else {
    out += "settings from " + conf.variable + ": " + log::json_string(conf.conf) + "\n";
  }
  for (const config::EffectiveSetting& s : conf.settings) {
    out += printf_text("  %-32s %s%s\n", s.name.c_str(), s.value.c_str(),
                       s.origin == "default" ? "" : "  (set)");
  }
  out += "control socket: " + context.socket_path + "\n";
  if (!context.metrics_path.empty()) {
    out += printf_text("metrics file: %s, every %d s\n", context.metrics_path.c_str(),
                       context.metrics_interval_s);
  }
  const int captures = captures_in_progress().load(std::memory_order_relaxed);
  if (captures > 0) out += printf_text("stream captures in progress: %d\n", captures);
  if (devices.empty()) {
    out += "no device memory was allocated through the pool yet\n";
    return out;
  }
  for (const DeviceReading& d : devices) {
    out += "\n" + pool::memory_summary(d.stats, d.device);
    out += printf_text(
        "Device %d now: %d context%s; %llu block%s (%s) behind reuse fences; %s idle cached "
        "(largest free block %s); %s in threads' caches\n",
        d.device, d.contexts, d.contexts == 1 ? "" : "s",
        static_cast<unsigned long long>(d.fenced_blocks), d.fenced_blocks == 1 ? "" : "s",
        pool::bytes_text(d.fenced_bytes).c_str(), pool::bytes_text(d.idle_cached_bytes).c_str(),
        pool::bytes_text(d.largest_free_block).c_str(),
        pool::bytes_text(d.thread_cached_bytes).c_str());
  }
  return out;
}

struct Released {
  int device = 0;
  int ctx = 0;
  std::int64_t bytes = 0, segments = 0, device_frees = 0;
  std::int64_t reserved_after = 0;
  std::uint64_t fenced_blocks = 0, fenced_bytes = 0;
};

// The idle cached segments of every live pool go back to the device, each pool under its lock
// (the thread caches' freed blocks first: to the program they are free). Nothing while a stream
// capture is in progress (a cuMemFree would invalidate it): refused, with why.
std::string empty_cache(const RequestContext& context) {
  std::vector<Released> released;
  int captures = captures_in_progress().load(std::memory_order_acquire);
  if (captures == 0) {
    for_each_live_pool([&](ContextPool& p) {
      std::lock_guard<SpinLock> lock(p.mutex);
      captures = captures_in_progress().load(std::memory_order_acquire);
      if (captures > 0) return true;
      Released r;
      r.device = p.device;
      r.ctx = p.ctx;
      const pool::DeviceStats& s = p.pool.stats();
      const std::int64_t reserved = s.reserved_bytes[0].current;
      const std::int64_t segments = s.segment[0].current;
      const std::int64_t frees = s.num_device_free;
      if (!p.thread_caches.empty()) thread_cache_flush_all(p);
      CallInfo& call = current_call();
      call.requested_by = context.peer_pid;
      p.pool.release_idle_segments();
      call.requested_by = 0;
      r.bytes = reserved - s.reserved_bytes[0].current;
      r.segments = segments - s.segment[0].current;
      r.device_frees = s.num_device_free - frees;
      r.reserved_after = s.reserved_bytes[0].current;
      r.fenced_blocks = p.pool.pending_fences();
      r.fenced_bytes = p.pool.pending_fence_bytes();
      released.push_back(r);
      return false;
    });
  }
  std::string out =
      "{\"schema\":\"cudapool.control.empty_cache/1\",\"pid\":" + std::to_string(::getpid()) +
      ",\"requested_by\":" + std::to_string(context.peer_pid);
  if (captures > 0) {
    out += ",\"refused\":" +
           log::json_string(printf_text("%d stream capture%s in progress: a cuMemFree now would "
                                        "invalidate it; ask again once it ended",
                                        captures, captures == 1 ? " is" : "s are"));
  }
  out += ",\"pools\":[";
  for (const Released& r : released) {
    if (out.back() != '[') out += ',';
    out += printf_text(
        "{\"device\":%d,\"ctx\":%d,\"released_bytes\":%lld,\"released_segments\":%lld,"
        "\"device_frees\":%lld,\"reserved_bytes\":%lld,\"fenced_blocks\":%llu,"
        "\"fenced_bytes\":%llu}",
        r.device, r.ctx, static_cast<long long>(r.bytes), static_cast<long long>(r.segments),
        static_cast<long long>(r.device_frees), static_cast<long long>(r.reserved_after),
        static_cast<unsigned long long>(r.fenced_blocks),
        static_cast<unsigned long long>(r.fenced_bytes));
  }
  out += "]}\n";
  return out;
}

std::string help_text() {
  return std::string("requests (one line each, then the answer and the connection closes): ") +
         kKnown + "\n";
}

}  // namespace

std::string answer_request(std::string_view request, const RequestContext& context) {
  while (!request.empty() && (request.back() == '\r' || request.back() == ' ')) {
    request.remove_suffix(1);
  }
  while (!request.empty() && request.front() == ' ') request.remove_prefix(1);
  if (request == "ping") {
    return printf_text("ok\ncudapool %s pid %d\n", CUDAPOOL_VERSION, static_cast<int>(::getpid()));
  }
  if (request == "stats") return "ok\n" + stats_text(read_devices(), context);
  if (request == "stats json") return "ok\n" + stats_json(read_devices(), context);
  if (request == "prometheus" || request == "stats prometheus") {
    const std::vector<DeviceReading> devices = read_devices();
    return "ok\n" + prometheus_text(devices, process_figures_now());
  }
  if (request == "empty-cache") return "ok\n" + empty_cache(context);
  if (request == "snapshot") return "ok\n" + snapshot_json(read_blocks());
  if (request == "help") return "ok\n" + help_text();
  return std::string("error: unknown request (known: ") + kKnown + ")\n";
}

}  // namespace cudapool::shim
