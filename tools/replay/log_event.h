// SPDX-License-Identifier: Apache-2.0
// tools/replay/log_event.h: reading the lines of a cudapool.log/1 file that replay cares about:
// the header (conf string, device memory) and the events alloc, free_requested, oom,
// empty_cache, segment_alloc (its address) and context_dropped. Every line is checked against the
// format's one definition of a valid line (docs/log-format.md, "Valid lines"), the rule the
// report's reader (tests/oracle/reader.py) follows too; valid events of other
// actions are classified as "other" and skipped. The writers' event lines take a fast path
// (log/read/writer_line.h) that gives exactly what the general path gives them. Not here:
// splitting a stream into lines (log/read/line_reader.h), what the replay does with an event
// (replayer.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "log/read/writer_line.h"
#include "tools/replay/definition_line.h"

namespace cudapool::replay {

// The ranges of dev and ctx (log/read/writer_line.h): a line with one outside is malformed.
using log::kContextLimit;
using log::kDeviceLimit;

struct LogHeader {
  std::string schema;
  std::optional<std::string> conf;             // the conf string the logged process used
  std::map<int, std::uint64_t> device_memory;  // device id -> total memory in bytes
  std::set<int> listed_devices;                // the ids of its devices list (valid entries)
  // The writer had reuse fences (the header's options name reuse_fence, as the shim's do): a
  // free_requested not followed at once by its free_completed was held behind a fence.
  bool fences_logged = false;
  // Carried into a log the replay writes (--write-log).
  std::string host;
  std::uint64_t pid = 0, start_unix_ns = 0, start_t_ns = 0;
};

enum class EventKind : std::uint8_t {
  kAlloc,
  kFree,           // free_requested
  kFreeCompleted,  // free_completed
  kOom,
  kEmptyCache,
  kSegmentAlloc,
  kPoolOther,       // segment_free, segment_map, segment_unmap: the pool's own, nothing to replay
  kContextDropped,  // a context's pool was dropped with its context: a new one starts
  kSegmentRefused,  // the device refused a segment or pages of `size` bytes
  kIdleRelease,     // a tick of the pool's idle-release clock (idle_release_ms)
  kOther
};

struct LogEvent {
  EventKind kind = EventKind::kOther;
  int device = 0;
  int ctx = 0;  // "ctx", the context's number: which of the device's pooled contexts (absent: 0)
  std::uint32_t tid = 0;  // the thread and time of the event, for a log the replay writes
  std::uint64_t ptr = 0;
  std::uint64_t size = 0;
  std::uint64_t stream = 0;
  std::uint64_t t_ns = 0;
  // empty_cache events: asked from outside through the control endpoint ("requested_by"), which
  // releases the idle segments without waiting for reuse fences (DevicePool::release_idle_segments)
  bool requested_from_outside = false;
};

// kDefinition: a definition line of Python stacks (definition_line.h), valid: not an event, never
// replayed.
enum class LineKind : std::uint8_t { kEvent, kHeader, kBlank, kMalformed, kDefinition };

struct ParsedLine {
  LineKind kind = LineKind::kBlank;
  LogEvent event;
  std::string problem;  // why a line is malformed
  // kDefinition: which kind, and the id it defines
  DefinitionKind definition = DefinitionKind::kNone;
  std::uint64_t definition_id = 0;
};

// Parses one line (without its newline). A header is an object without "action" (or with action
// null) whose "schema" is a string starting with "cudapool.log/"; it is parsed into *header when
// header is not null. The summary line (action "summary") is a kEvent of kind kOther; a
// python_frame or python_stack line a kDefinition, or kMalformed when its fields are not of their
// kinds.
ParsedLine parse_log_line(std::string_view line, LogHeader* header);

// The problem of a line longer than kMaxLineBytes (log/read/line_reader.h), as parse_log_line words
// them.
std::string too_long_problem();

}  // namespace cudapool::replay
