// SPDX-License-Identifier: Apache-2.0
// shim/control/control_json.cpp: see control_json.h.
#include "shim/control/control_json.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "log/json_text.h"
#include "shim/pools/stream_capture.h"
#include "shim/support/clock.h"
#include "shim/support/settings.h"

#ifndef CUDAPOOL_VERSION
#define CUDAPOOL_VERSION "0.0.0"
#endif

namespace cudapool::shim {

namespace {

void member(std::string& out, const char* name) {
  if (!out.empty() && out.back() != '{' && out.back() != '[') out += ',';
  log::append_json_string(out, name);
  out += ':';
}

void number(std::string& out, const char* name, long long value) {
  member(out, name);
  out += std::to_string(value);
}

void text(std::string& out, const char* name, const std::string& value) {
  member(out, name);
  log::append_json_string(out, value);
}

std::vector<std::string> command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  const std::string all = s.str();
  std::vector<std::string> argv;
  for (std::size_t start = 0; start < all.size();) {
    const std::size_t end = all.find('\0', start);
    argv.push_back(all.substr(start, end == std::string::npos ? end : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return argv;
}

std::string executable() {
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  return n > 0 ? std::string(exe, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

std::string process_json_members() {
  std::string out = "{";
  text(out, "version", CUDAPOOL_VERSION);
  number(out, "pid", static_cast<long long>(::getpid()));
  text(out, "executable", executable());
  member(out, "argv");
  log::append_string_array(out, command_line());
  member(out, "start_unix_s");
  char t[64];
  std::snprintf(t, sizeof t, "%.6f", shim_start_unix_s());
  out += t;
  const std::uint64_t now = monotonic_ns();
  number(out, "uptime_ns",
         static_cast<long long>(now > reporting().start_ns ? now - reporting().start_ns : 0));
  const ConfRecord& conf = conf_record();
  text(out, "conf", conf.conf);
  text(out, "conf_source", conf.variable);
  member(out, "options");
  out += '{';
  for (const config::EffectiveSetting& s : conf.settings) {
    member(out, s.name.c_str());
    const std::string value = log::setting_json(s);
    out += value.empty() ? std::string("null") : value;
  }
  out += '}';
  return out.substr(1);
}

std::string stats_json(const std::vector<DeviceReading>& devices, const RequestContext& context) {
  std::string out = "{";
  text(out, "schema", "cudapool.control/1");
  out += ',';
  out += process_json_members();
  member(out, "control");
  out += '{';
  text(out, "socket", context.socket_path);
  text(out, "metrics", context.metrics_path);
  number(out, "metrics_interval_s", context.metrics_interval_s);
  out += '}';
  number(out, "captures_in_progress", captures_in_progress().load(std::memory_order_relaxed));
  member(out, "devices");
  out += '[';
  for (const DeviceReading& d : devices) {
    if (out.back() != '[') out += ',';
    out += '{';
    number(out, "device", d.device);
    number(out, "contexts", d.contexts);
    member(out, "stats");
    out += '{';
    pool::for_each_stat(d.stats, [&](std::string_view name, std::int64_t value) {
      member(out, std::string(name).c_str());
      out += std::to_string(value);
    });
    out += '}';
    number(out, "fenced_blocks", static_cast<long long>(d.fenced_blocks));
    number(out, "fenced_bytes", static_cast<long long>(d.fenced_bytes));
    number(out, "idle_cached_bytes", static_cast<long long>(d.idle_cached_bytes));
    number(out, "largest_free_block", static_cast<long long>(d.largest_free_block));
    number(out, "thread_cached_bytes", static_cast<long long>(d.thread_cached_bytes));
    member(out, "fences");
    out += '{';
    for (const auto& [name, value] : d.fence_counters) {
      number(out, name, static_cast<long long>(value));
    }
    out += "}}";
  }
  out += "]}\n";
  return out;
}

std::string snapshot_json(const std::vector<PoolBlocks>& pools) {
  static constexpr const char* kStates[] = {"allocated", "fenced", "free", "unmapped"};
  std::string out = "{";
  text(out, "schema", "cudapool.control.snapshot/1");
  out += ',';
  out += process_json_members();
  member(out, "pools");
  out += '[';
  for (const PoolBlocks& p : pools) {
    if (out.back() != '[') out += ',';
    out += '{';
    number(out, "device", p.device);
    number(out, "ctx", p.ctx);
    // [ptr, size, requested, segment, stream, state, small, expandable, thread_cached]
    member(out, "blocks");
    out += '[';
    out.reserve(out.size() + p.blocks.size() * 96);
    for (const BlockReading& b : p.blocks) {
      if (out.back() != '[') out += ",\n";
      char line[256];
      std::snprintf(line, sizeof line, "[%llu,%llu,%llu,%llu,%llu,\"%s\",%s,%s,%s]",
                    static_cast<unsigned long long>(b.ptr), static_cast<unsigned long long>(b.size),
                    static_cast<unsigned long long>(b.requested),
                    static_cast<unsigned long long>(b.segment),
                    static_cast<unsigned long long>(b.stream), kStates[static_cast<int>(b.state)],
                    b.small ? "true" : "false", b.expandable ? "true" : "false",
                    b.thread_cached ? "true" : "false");
      out += line;
    }
    out += "]}";
  }
  out += "]}\n";
  return out;
}

}  // namespace cudapool::shim
