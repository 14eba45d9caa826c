// SPDX-License-Identifier: Apache-2.0
// shim/control/prometheus_text.cpp: see prometheus_text.h.
#include "shim/control/prometheus_text.h"

#include <unistd.h>

#include <cstdio>

#include "shim/control/request_context.h"
#include "shim/pools/stream_capture.h"

namespace cudapool::shim {

namespace {

constexpr const char* kPoolLabels[pool::kStatTypes] = {"all", "small", "large"};

struct Writer {
  const std::vector<DeviceReading>& devices;
  const ProcessFigures& process;
  std::string out;

  void family(const std::string& name, const char* type, const std::string& help) {
    out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  // name{pid="P",device="D"[,pool="X"]} value
  void sample(const std::string& name, int device, const char* pool_label, long long value) {
    char line[320];
    std::snprintf(line, sizeof line, "%s{pid=\"%llu\",device=\"%d\"%s%s%s} %lld\n", name.c_str(),
                  static_cast<unsigned long long>(process.pid), device,
                  pool_label != nullptr ? ",pool=\"" : "", pool_label != nullptr ? pool_label : "",
                  pool_label != nullptr ? "\"" : "", value);
    out += line;
  }

  // The four families of a Stat (current, peak, allocated, freed), with or without pools.
  template <class Get>
  void stat_families(const char* member, const char* meaning, bool pools, Get get) {
    static constexpr const char* kSuffix[4] = {"", "_peak", "_allocated_total", "_freed_total"};
    static constexpr const char* kType[4] = {"gauge", "gauge", "counter", "counter"};
    static constexpr const char* kWhat[4] = {"now", "at the peak", "added in total",
                                             "removed in total"};
    static constexpr const char* kField[4] = {"current", "peak", "allocated", "freed"};
    for (int f = 0; f < 4; ++f) {
      const std::string name = std::string("cudapool_") + member + kSuffix[f];
      family(name, kType[f],
             std::string(meaning) + ", " + kWhat[f] + " (memory_stats " + member +
                 (pools ? ".POOL." : ".") + kField[f] + ")");
      for (const DeviceReading& d : devices) {
        for (std::size_t t = 0; t < (pools ? pool::kStatTypes : 1); ++t) {
          const pool::Stat& s = get(d.stats, t);
          const long long v[4] = {s.current, s.peak, s.allocated, s.freed};
          sample(name, d.device, pools ? kPoolLabels[t] : nullptr, v[f]);
        }
      }
    }
  }

  void counter_family(const char* member, bool sum, const char* meaning,
                      std::int64_t pool::DeviceStats::*field) {
    const std::string name = std::string("cudapool_") + member + (sum ? "_total" : "");
    family(name, sum ? "counter" : "gauge",
           std::string(meaning) + " (memory_stats " + member + ")");
    for (const DeviceReading& d : devices) sample(name, d.device, nullptr, d.stats.*field);
  }

  template <class Get>
  void device_family(const char* name, const char* help, Get get) {
    family(name, "gauge", help);
    for (const DeviceReading& d : devices) {
      sample(name, d.device, nullptr, static_cast<long long>(get(d)));
    }
  }

  void process_family(const char* name, const char* help, double value, bool whole) {
    family(name, "gauge", help);
    char line[160];
    if (whole) {
      std::snprintf(line, sizeof line, "%s{pid=\"%llu\"} %.0f\n", name,
                    static_cast<unsigned long long>(process.pid), value);
    } else {
      std::snprintf(line, sizeof line, "%s{pid=\"%llu\"} %.3f\n", name,
                    static_cast<unsigned long long>(process.pid), value);
    }
    out += line;
  }
};

constexpr bool is_sum(const char* combine) {
  return combine[0] == 's';
}

}  // namespace

ProcessFigures process_figures_now() {
  ProcessFigures figures;
  figures.pid = static_cast<std::uint64_t>(::getpid());
  figures.start_unix_s = shim_start_unix_s();
  figures.read_unix_s = unix_now_s();
  figures.captures_in_progress = captures_in_progress().load(std::memory_order_relaxed);
  return figures;
}

std::string prometheus_text(const std::vector<DeviceReading>& devices, const ProcessFigures& p) {
  Writer w{devices, p, {}};
  w.out.reserve(16384 + devices.size() * 12288);
#define CUDAPOOL_STAT_ARRAY(member, label, format, meaning) \
  w.stat_families(                                          \
      #member, meaning, true,                               \
      [](const pool::DeviceStats& s, std::size_t t) -> const pool::Stat& { return s.member[t]; });
#define CUDAPOOL_STAT_SINGLE(member, label, meaning) \
  w.stat_families(                                   \
      #member, meaning, false,                       \
      [](const pool::DeviceStats& s, std::size_t) -> const pool::Stat& { return s.member; });
#define CUDAPOOL_STAT_COUNTER(member, combine, meaning) \
  w.counter_family(#member, is_sum(#combine), meaning, &pool::DeviceStats::member);
#include "pool/stats.def"
#undef CUDAPOOL_STAT_ARRAY
#undef CUDAPOOL_STAT_SINGLE
#undef CUDAPOOL_STAT_COUNTER
  w.device_family("cudapool_contexts", "CUDA contexts with a pool on the device",
                  [](const DeviceReading& d) { return d.contexts; });
  w.device_family("cudapool_fenced_blocks", "freed blocks still behind a reuse fence, now",
                  [](const DeviceReading& d) { return d.fenced_blocks; });
  w.device_family("cudapool_fenced_bytes", "bytes of the freed blocks behind a reuse fence, now",
                  [](const DeviceReading& d) { return d.fenced_bytes; });
  w.device_family("cudapool_idle_cached_bytes",
                  "bytes of the free cached blocks (what empty-cache may give back), now",
                  [](const DeviceReading& d) { return d.idle_cached_bytes; });
  w.device_family("cudapool_largest_free_block_bytes", "the largest free cached block, now",
                  [](const DeviceReading& d) { return d.largest_free_block; });
  w.device_family("cudapool_thread_cached_bytes",
                  "bytes of freed blocks kept in threads' caches (counted as allocated), now",
                  [](const DeviceReading& d) { return d.thread_cached_bytes; });
  w.process_family("cudapool_captures_in_progress", "stream captures in progress, now",
                   p.captures_in_progress, true);
  w.process_family("cudapool_process_start_time_seconds",
                   "when the shim started in the process, seconds since the Unix epoch",
                   p.start_unix_s, false);
  w.process_family("cudapool_read_timestamp_seconds",
                   "when these figures were read, seconds since the Unix epoch", p.read_unix_s,
                   false);
  return w.out;
}

}  // namespace cudapool::shim
