// log/format_lines.cpp: the header and summary lines (format_header, format_summary, see
// format.h), one std::string each, written once at start and at exit. The event line is in
// format_event.cpp, the JSON text helpers in json_text.cpp. No I/O here.
#include <algorithm>

#include "log/format.h"
#include "log/json_text.h"

namespace cudapool::log {

std::string format_header(const HeaderInfo& h) {
  std::string out;
  out.reserve(512);
  out += "{\"schema\":";
  append_json_string(out, kSchema);
  out += ",\"version\":";
  append_json_string(out, h.version);
  out += ",\"pid\":";
  append_u64(out, h.pid);
  out += ",\"host\":";
  append_json_string(out, h.host);
  out += ",\"executable\":";
  append_json_string(out, h.executable);
  out += ",\"argv\":";
  append_string_array(out, h.argv);
  out += ",\"start_time\":";
  append_json_string(out, iso8601_utc(h.start_unix_ns));
  out += ",\"start_unix_ns\":";
  append_u64(out, h.start_unix_ns);
  if (h.start_t_ns != 0) {
    out += ",\"start_t_ns\":";
    append_u64(out, h.start_t_ns);
  }
  if (h.rank >= 0) {
    out += ",\"rank\":";
    append_u64(out, static_cast<std::uint64_t>(h.rank));
    out += ",\"rank_from\":";
    append_json_string(out, h.rank_from);
  }
  out += ",\"conf\":";
  append_json_string(out, h.conf);
  out += ",\"conf_source\":";
  append_json_string(out, h.conf_source);
  out += ",\"options\":{";
  for (std::size_t i = 0; i < h.options.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_json_string(out, h.options[i].first);
    out.push_back(':');
    out += h.options[i].second.empty() ? std::string("null") : h.options[i].second;
  }
  out += "},\"devices\":[";
  for (std::size_t i = 0; i < h.devices.size(); ++i) {
    const DeviceInfo& d = h.devices[i];
    if (i > 0) out.push_back(',');
    out += "{\"id\":";
    out += std::to_string(d.id);
    out += ",\"name\":";
    append_json_string(out, d.name);
    out += ",\"total_memory\":";
    append_u64(out, d.total_memory);
    out.push_back('}');
  }
  out += "]}\n";
  return out;
}

namespace {

// The longest "leaks_omitted" object: three numbers of up to 20 digits.
constexpr std::size_t kOmittedBytes = 100;

}  // namespace

std::string format_summary(const Summary& s) {
  // One entry of "leaks".
  const auto append_leak = [](std::string& out, const Leak& l) {
    out += "{\"dev\":";
    out += std::to_string(l.dev);
    out += ",\"ptr\":";
    append_hex(out, l.ptr);
    out += ",\"size\":";
    append_u64(out, l.size);
    out += ",\"block_size\":";
    append_u64(out, l.block_size);
    out += ",\"seq\":";
    append_u64(out, l.seq);
    out += ",\"t_ns\":";
    append_u64(out, l.t_ns);
    out += ",\"tid\":";
    append_u64(out, l.tid);
    if (!l.symbols.empty()) {
      out += ",\"backtrace\":";
      append_string_array(out, l.symbols);
    } else if (!l.frames.empty()) {
      out += ",\"backtrace\":[";
      for (std::size_t k = 0; k < l.frames.size(); ++k) {
        if (k > 0) out.push_back(',');
        append_hex(out, l.frames[k]);
      }
      out.push_back(']');
    }
    out.push_back('}');
  };

  // What follows the leaks first: the leaks get the room the line has left.
  std::string tail;
  if (!s.modules.empty()) {
    tail.reserve(120 * s.modules.size());
    tail += ",\"modules\":[";
    for (std::size_t i = 0; i < s.modules.size(); ++i) {
      if (i > 0) tail.push_back(',');
      tail += "{\"base\":";
      append_hex(tail, s.modules[i].base);
      tail += ",\"end\":";
      append_hex(tail, s.modules[i].end);
      tail += ",\"path\":";
      append_json_string(tail, s.modules[i].path);
      tail.push_back('}');
    }
    tail += "]";
  }
  tail += ",\"log_errors\":{\"write_failed\":";
  tail += s.write_failed ? "true" : "false";
  tail += ",\"records_lost\":";
  append_u64(tail, s.records_lost);
  tail += "}}\n";

  const std::size_t listed_at_most = std::min(s.leaks.size(), kMaxSummaryLeaks);
  std::string out;
  out.reserve(4096 + 160 * listed_at_most + tail.size());
  out += "{\"schema\":";
  append_json_string(out, kSchema);
  out += ",\"action\":\"summary\",\"seq\":";
  append_u64(out, s.seq);
  out += ",\"t_ns\":";
  append_u64(out, s.t_ns);
  out += ",\"events\":";
  append_u64(out, s.events);
  out += ",\"devices\":{";
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "\"";
    out += std::to_string(s.devices[i].first);
    out += "\":{\"stats\":{";
    bool first = true;
    pool::for_each_stat(s.devices[i].second, [&](std::string_view name, std::int64_t value) {
      if (!first) out.push_back(',');
      first = false;
      append_json_string(out, name);
      out.push_back(':');
      out += std::to_string(value);
    });
    out += "}";
    if (i < s.fences.size() && !s.fences[i].empty()) {
      out += ",\"fences\":{";
      for (std::size_t k = 0; k < s.fences[i].size(); ++k) {
        if (k > 0) out.push_back(',');
        append_json_string(out, s.fences[i][k].first);
        out.push_back(':');
        append_u64(out, s.fences[i][k].second);
      }
      out += "}";
    }
    out += "}";
  }
  out += "},\"leaks\":[";
  // The first blocks, as many as kMaxSummaryLeaks and the line's limit allow.
  const std::size_t room = out.size() + tail.size() + kOmittedBytes + 1 < kMaxSummaryLine
                               ? kMaxSummaryLine - tail.size() - kOmittedBytes - 1
                               : out.size();
  std::string entry;
  std::size_t listed = 0;
  for (; listed < listed_at_most; ++listed) {
    entry.clear();
    if (listed > 0) entry.push_back(',');
    append_leak(entry, s.leaks[listed]);
    if (out.size() + entry.size() > room) break;
    out += entry;
  }
  out += "]";
  if (listed < s.leaks.size()) {
    std::uint64_t size = 0, block_size = 0;
    for (std::size_t i = listed; i < s.leaks.size(); ++i) {
      size += s.leaks[i].size;
      block_size += s.leaks[i].block_size;
    }
    out += ",\"leaks_omitted\":{\"count\":";
    append_u64(out, s.leaks.size() - listed);
    out += ",\"size\":";
    append_u64(out, size);
    out += ",\"block_size\":";
    append_u64(out, block_size);
    out += "}";
  }
  out += tail;
  return out;
}

}  // namespace cudapool::log
