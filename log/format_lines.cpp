// SPDX-License-Identifier: Apache-2.0
// log/format_lines.cpp: the header and summary lines (format_header, format_summary, see
// format.h), one std::string each, written once at start and at exit, their keys log/fields.def's
// (fields.h). The event line is in
// format_event.cpp, the JSON text helpers in json_text.cpp. No I/O here.
#include <algorithm>

#include "log/fields.h"
#include "log/format.h"
#include "log/json_text.h"

namespace cudapool::log {

namespace {

using L = LineField;

// `,"name":` of a field of log/fields.def; the first of an object without the comma.
void key(std::string& out, LineField field, bool first = false) {
  if (!first) out.push_back(',');
  out.push_back('"');
  out += line_field_name(field);
  out += "\":";
}

// The longest "leaks_omitted" object: three numbers of up to 20 digits.
constexpr std::size_t kOmittedBytes = 100;

}  // namespace

std::string format_header(const HeaderInfo& h) {
  std::string out;
  out.reserve(512);
  out.push_back('{');
  key(out, L::kHeaderSchema, true);
  append_json_string(out, kSchema);
  key(out, L::kHeaderVersion);
  append_json_string(out, h.version);
  key(out, L::kHeaderPid);
  append_u64(out, h.pid);
  key(out, L::kHeaderHost);
  append_json_string(out, h.host);
  key(out, L::kHeaderExecutable);
  append_json_string(out, h.executable);
  key(out, L::kHeaderArgv);
  append_string_array(out, h.argv);
  key(out, L::kHeaderStartTime);
  append_json_string(out, iso8601_utc(h.start_unix_ns));
  key(out, L::kHeaderStartUnixNs);
  append_u64(out, h.start_unix_ns);
  if (h.start_t_ns != 0) {
    key(out, L::kHeaderStartTNs);
    append_u64(out, h.start_t_ns);
  }
  if (h.rank >= 0) {
    key(out, L::kHeaderRank);
    append_u64(out, static_cast<std::uint64_t>(h.rank));
    key(out, L::kHeaderRankFrom);
    append_json_string(out, h.rank_from);
  }
  key(out, L::kHeaderConf);
  append_json_string(out, h.conf);
  key(out, L::kHeaderConfSource);
  append_json_string(out, h.conf_source);
  key(out, L::kHeaderOptions);
  out.push_back('{');
  for (std::size_t i = 0; i < h.options.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_json_string(out, h.options[i].first);
    out.push_back(':');
    out += h.options[i].second.empty() ? std::string("null") : h.options[i].second;
  }
  out.push_back('}');
  key(out, L::kHeaderDevices);
  out.push_back('[');
  for (std::size_t i = 0; i < h.devices.size(); ++i) {
    const DeviceInfo& d = h.devices[i];
    if (i > 0) out.push_back(',');
    out.push_back('{');
    key(out, L::kHeaderDeviceId, true);
    out += std::to_string(d.id);
    key(out, L::kHeaderDeviceName);
    append_json_string(out, d.name);
    key(out, L::kHeaderDeviceTotalMemory);
    append_u64(out, d.total_memory);
    out.push_back('}');
  }
  out += "]}\n";
  return out;
}

std::string format_summary(const Summary& s) {
  // One entry of "leaks".
  const auto append_leak = [](std::string& out, const Leak& l) {
    out.push_back('{');
    key(out, L::kLeakDev, true);
    out += std::to_string(l.dev);
    key(out, L::kLeakPtr);
    append_hex(out, l.ptr);
    key(out, L::kLeakSize);
    append_u64(out, l.size);
    key(out, L::kLeakBlockSize);
    append_u64(out, l.block_size);
    key(out, L::kLeakSeq);
    append_u64(out, l.seq);
    key(out, L::kLeakTNs);
    append_u64(out, l.t_ns);
    key(out, L::kLeakTid);
    append_u64(out, l.tid);
    if (!l.symbols.empty()) {
      key(out, L::kLeakBacktrace);
      append_string_array(out, l.symbols);
    } else if (!l.frames.empty()) {
      key(out, L::kLeakBacktrace);
      out.push_back('[');
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
    key(tail, L::kSummaryModules);
    tail.push_back('[');
    for (std::size_t i = 0; i < s.modules.size(); ++i) {
      if (i > 0) tail.push_back(',');
      tail.push_back('{');
      key(tail, L::kModuleBase, true);
      append_hex(tail, s.modules[i].base);
      key(tail, L::kModuleEnd);
      append_hex(tail, s.modules[i].end);
      key(tail, L::kModulePath);
      append_json_string(tail, s.modules[i].path);
      if (s.modules[i].bias != 0) {
        key(tail, L::kModuleBias);
        append_hex(tail, s.modules[i].bias);
      }
      if (!s.modules[i].build_id.empty()) {
        key(tail, L::kModuleBuildId);
        append_json_string(tail, s.modules[i].build_id);
      }
      tail.push_back('}');
    }
    tail += "]";
  }
  if (s.python_stacks.recorded) {
    const Summary::PythonStacks& py = s.python_stacks;
    key(tail, L::kSummaryPythonStacks);
    const std::pair<const char*, std::uint64_t> counts[] = {{"taken", py.taken},
                                                            {"no_thread_state", py.no_thread_state},
                                                            {"no_frames", py.no_frames},
                                                            {"not_running", py.not_running},
                                                            {"failed", py.failed}};
    char sep = '{';
    for (const auto& [name, value] : counts) {
      tail.push_back(sep);
      sep = ',';
      append_json_string(tail, name);
      tail.push_back(':');
      append_u64(tail, value);
    }
    tail.push_back('}');
  }
  key(tail, L::kSummaryLogErrors);
  tail.push_back('{');
  key(tail, L::kLogErrorsWriteFailed, true);
  tail += s.write_failed ? "true" : "false";
  key(tail, L::kLogErrorsRecordsLost);
  append_u64(tail, s.records_lost);
  tail += "}}\n";

  const std::size_t listed_at_most = std::min(s.leaks.size(), kMaxSummaryLeaks);
  std::string out;
  out.reserve(4096 + 160 * listed_at_most + tail.size());
  out.push_back('{');
  key(out, L::kSummarySchema, true);
  append_json_string(out, kSchema);
  key(out, L::kSummaryAction);
  append_json_string(out, kSummaryAction);
  key(out, L::kSummarySeq);
  append_u64(out, s.seq);
  key(out, L::kSummaryTNs);
  append_u64(out, s.t_ns);
  key(out, L::kSummaryEvents);
  append_u64(out, s.events);
  key(out, L::kSummaryDevices);
  out.push_back('{');
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "\"";
    out += std::to_string(s.devices[i].first);
    out += "\":{";
    key(out, L::kSummaryDeviceStats, true);
    out.push_back('{');
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
      key(out, L::kSummaryDeviceFences);
      out.push_back('{');
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
  out.push_back('}');
  key(out, L::kSummaryLeaks);
  out.push_back('[');
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
    key(out, L::kSummaryLeaksOmitted);
    out.push_back('{');
    key(out, L::kLeaksOmittedCount, true);
    append_u64(out, s.leaks.size() - listed);
    key(out, L::kLeaksOmittedSize);
    append_u64(out, size);
    key(out, L::kLeaksOmittedBlockSize);
    append_u64(out, block_size);
    out += "}";
  }
  out += tail;
  return out;
}

std::string format_python_frame(std::uint32_t id, const PythonFrame& frame) {
  std::string out;
  out.reserve(64 + frame.file.size() + frame.function.size());
  out.push_back('{');
  key(out, L::kPythonFrameAction, true);
  append_json_string(out, "python_frame");
  key(out, L::kPythonFrameId);
  append_u64(out, id);
  key(out, L::kPythonFrameFile);
  append_json_string(out, frame.file);
  key(out, L::kPythonFrameLine);
  append_u64(out, frame.line);
  key(out, L::kPythonFrameFunction);
  append_json_string(out, frame.function);
  out += "}\n";
  return out;
}

std::string format_python_stack(std::uint32_t id, const std::vector<std::uint32_t>& frames) {
  std::string out;
  out.reserve(48 + 11 * frames.size());
  out.push_back('{');
  key(out, L::kPythonStackAction, true);
  append_json_string(out, "python_stack");
  key(out, L::kPythonStackId);
  append_u64(out, id);
  key(out, L::kPythonStackFrames);
  out.push_back('[');
  for (std::size_t i = 0; i < frames.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_u64(out, frames[i]);
  }
  out += "]}\n";
  return out;
}

}  // namespace cudapool::log
