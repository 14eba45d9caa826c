// SPDX-License-Identifier: Apache-2.0
// tools/analyze/report.h: what `cudapool report` says about a log, built from the engine's pass
// (analysis.h): the port of tests/oracle/report.py build_report() and its parts
// (device_reports, impossible, the notes; leaks.h for the leaks). Kept as data so that the report
// object and the page (report_json.h, page_json.h) say the same. Not here: the JSON
// (report_json.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tools/analyze/analysis.h"
#include "tools/analyze/figure.h"
#include "tools/analyze/held_report.h"
#include "tools/analyze/json_value.h"

namespace cudapool::analyze {

struct PeakReport {
  Figure bytes;
  std::uint64_t seq, t_ns;
  std::optional<double> time_s;
};

struct Fragmentation {
  std::uint64_t seq, t_ns;
  std::optional<double> time_s;
  // docs/report.md, "Words and figures": free_cached = reserved - allocated - fenced (fenced
  // bytes wait for work on another stream: not free); fragmentation = 1 - largest / free_cached.
  Figure reserved, allocated, fenced, free_cached;
  UFigure largest;
  std::optional<UFigure> largest_at;
  std::optional<std::uint64_t> largest_segment;
  std::optional<double> fragmentation;  // none: its figures are impossible
  std::size_t regions;
  bool free_on_request;
  // The event that set the peak (a segment_alloc, or a segment_map: set_by_map) and the layout
  // as the request that came next found it, without those new bytes: its free bytes (none when
  // they would be negative: an inconsistent log) and its largest free block; the request itself
  // (the first alloc of the device after the peak), when one came.
  bool set_by_map = false;
  std::uint64_t set_ptr = 0, set_size = 0;
  std::optional<Figure> free_before;
  UFigure largest_before = 0;
  std::optional<Peak::Request> request;
};

struct DeviceReport {
  int dev;
  bool from_summary;
  std::vector<std::pair<std::string, Figure>> stats;  // in the order written
  std::uint64_t events;
  std::optional<PeakReport> peak_allocated, peak_reserved;
  std::optional<Fragmentation> fragmentation;
  std::uint64_t ooms;  // oom events (the cross-rank table)
  HeldPart held{};     // its bytes held over time (held_report.h)
};

// A leak as listed: the fields as the summary (or the events) have them (null where missing or
// of the wrong kind), and the events' verdict on it (a summary's entry).
struct LeakEntry {
  JsonValue dev, ptr, size, block_size, seq, t_ns, tid, backtrace;
  std::optional<double> time_s;
  std::uint64_t order = 0;  // the events' order (leaks of a log without summary)
  bool checked = false;     // a summary's entry: events_* below say what the events have
  bool disagrees = false;
  std::string why;
  bool counted = false;
  std::uint64_t events_size = 0, events_block_size = 0;
  // The block bytes the entry counts for (leaks.py counted_block_size), none when not counted.
  std::optional<std::uint64_t> counted_block_size() const;
};

// The blocks alive at the end grouped by site (the alloc's backtrace) and block size, each group
// told apart (leaks.cpp kind_of, docs/report.md "Blocks alive at exit"): "long-lived" (allocated
// by the device's allocated peak and not growing: weights, optimizer state), "growing" (at least
// kGrowingCount blocks whose allocations span half the run or more: a leak's signature) or
// "after the peak" (neither).
inline constexpr std::uint64_t kGrowingCount = 3;
inline constexpr std::size_t kAliveGroupsListed = 25;
struct AliveGroup {
  int dev = 0;
  std::uint32_t backtrace = 0;  // BacktraceTable id, 0: none
  std::uint64_t block_size = 0, count = 0, first_seq = 0, last_seq = 0, first_t = 0, last_t = 0;
  Figure bytes = 0;
  std::string kind;
};
struct AliveKinds {
  std::array<std::uint64_t, 3> groups{}, blocks{};
  std::array<Figure, 3> bytes{};
};
inline constexpr const char* kAliveKinds[3] = {"long-lived", "growing", "after the peak"};
inline constexpr const char* kAliveRule =
    "grouped by allocation site (backtrace) and block size; growing: 3 or more blocks whose "
    "allocations span at least half of the run (a leak's signature); long-lived: allocated by "
    "the device's allocated peak and never freed (weights, optimizer state); after the peak: "
    "neither";

struct LeaksReport {
  bool from_summary = false;
  std::optional<std::uint64_t> last_seq;
  std::uint64_t count = 0;
  Figure bytes = 0, requested_bytes = 0;
  std::vector<LeakEntry> entries;
  std::optional<std::array<Figure, 3>> not_listed;  // count, size, block_size
  std::optional<std::array<Figure, 3>> omitted;
  std::uint64_t disagreements = 0;
  std::vector<AliveGroup> groups;  // every group, the most bytes first
  AliveKinds kinds;
};

struct Impossible {
  std::string where, what;
  Figure value;
};

struct Report {
  std::string log;  // the name shown
  std::vector<DeviceReport> devices;
  HeldLog held;  // all devices' bytes held over time, together (held_report.h)
  LeaksReport leaks;
  std::vector<Impossible> impossible;
  std::vector<std::string> notes;
  // The cross-rank row's rank: the header's, else the log's place.
  std::optional<Figure> header_rank;
};

Report build_report(const LogAnalysis& a, const std::string& name);

// report.py header_rank(): the header's rank field, else the first set of RANK,
// OMPI_COMM_WORLD_RANK, SLURM_PROCID in its environment (or env) object.
std::optional<Figure> header_rank(const JsonValue* header);

LeaksReport leak_report(const LogAnalysis& a, std::vector<std::string>& notes);

}  // namespace cudapool::analyze
