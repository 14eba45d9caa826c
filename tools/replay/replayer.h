// SPDX-License-Identifier: Apache-2.0
// tools/replay/replayer.h: drives one DevicePool per device and context (each over a
// SimulatedBackend in an address range of its own) with the events of a log, mapping the log's
// pointers to the simulation's. Counts and locates whatever in the log cannot be replayed; never
// fails on bad input, and its memory stays bounded (at most kMaxPools pools, devices the header
// lists). The CLI is main.cpp, output is report.h.
#pragma once

#include <bitset>
#include <cstdint>
#include <istream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/options.h"
#include "config/parse.h"
#include "pool/device_pool.h"
#include "pool/ptr_map.h"
#include "pool/simulated_backend.h"
#include "tools/replay/log_event.h"
#include "tools/replay/log_writer.h"
#include "tools/replay/recorded_log.h"

namespace cudapool::replay {

struct ReplaySettings {
  std::optional<std::string> conf;             // --conf; else the log header's conf; else defaults
  std::optional<std::uint64_t> device_memory;  // --device-memory; else the header's; else 80 GiB
  // Replay the logged device's answers: new segments at the addresses of the log's segment_alloc
  // events, and the segments it refused (segment_refused) refused again at the same point.
  bool log_addresses = true;
  // --write-log: the pool's events are written there as a log (log_writer.h); not owned.
  PoolLogWriter* write_log = nullptr;
  std::string version;  // the written log's version and argv
  std::vector<std::string> argv;
  // Other split limits to watch beside the conf's (pool/split_shadows.h, for cudapool tune): which
  // of them parted from the replay is parted() at the end.
  std::vector<pool::SplitLimits> shadows;
};

inline constexpr std::uint64_t kDefaultDeviceMemory = 80ull << 30;
// Pools alive at once: as many as the shim pools contexts (shim/pools/context_registry.h
// kMaxContextPools). The events of a pool that would be one more are skipped (counted).
inline constexpr std::size_t kMaxPools = 256;
// The largest simulated device (16 TiB): --device-memory above it is refused, a header's
// total_memory above it is simulated at it (noted).
inline constexpr std::uint64_t kMaxDeviceMemory = 1ull << 44;
// The simulated address space: the pool in slot s (0 to kMaxPools - 1, the lowest free one when
// the pool is made) takes [kPoolSpaceBase + s * kPoolSpan, + kPoolSpan), above 2^48, away from
// the addresses of real logs (segment_alloc addresses inside a pool's own range are not used).
inline constexpr std::uintptr_t kPoolSpaceBase = std::uintptr_t{1} << 48;
inline constexpr std::uintptr_t kPoolSpan = std::uintptr_t{1} << 55;
static_assert(kPoolSpaceBase + kMaxPools * kPoolSpan > kPoolSpaceBase, "fits in 64 bits");

struct ReplayCounts {
  std::uint64_t lines = 0;
  std::uint64_t events_replayed = 0;   // alloc, free_requested, oom and empty_cache applied
  std::uint64_t other_lines = 0;       // lines of other actions, and headers
  std::uint64_t definition_lines = 0;  // Python stacks' definition lines (in other_lines too)
  std::uint64_t blank_lines = 0;
  std::uint64_t malformed_lines = 0;
  std::uint64_t allocs = 0;
  std::uint64_t frees = 0;
  std::uint64_t failed_allocs = 0;           // alloc events that ran out of memory in the replay
  std::uint64_t frees_of_failed_allocs = 0;  // their frees, skipped
  std::uint64_t unknown_frees = 0;           // frees of pointers the replay never handed out
  std::uint64_t duplicate_allocs = 0;        // allocs of a pointer still live: skipped
  std::uint64_t zero_size_allocs = 0;        // skipped, as PyTorch hands out nothing for 0 bytes
  std::uint64_t oom_events = 0;
  std::uint64_t oom_not_reproduced = 0;  // an oom in the log that the replay could serve
  std::uint64_t empty_cache_events = 0;
  std::uint64_t free_completed_events = 0;
  std::uint64_t contexts_dropped = 0;  // context_dropped events: the device's pool started afresh
  std::uint64_t fenced_frees = 0;      // frees held behind a reuse fence in the logged run
  std::uint64_t segment_alloc_events = 0;        // addresses offered to the simulated device
  std::uint64_t segment_refused_events = 0;      // device refusals the simulated device repeats
  std::uint64_t segments_at_log_address = 0;     // segments the replay placed where the log did
  bool log_addresses_dropped = false;            // the replay's segments stopped matching the log's
  std::uint64_t events_of_unlisted_devices = 0;  // skipped: the header lists other devices
  std::uint64_t events_over_pool_limit = 0;      // skipped: their pool would be the 257th alive
  std::uint64_t reserved_pointer_allocs = 0;     // skipped: an alloc of 0xffffffffffffffff
  std::uint64_t address_space_refusals = 0;      // a pool's simulated address range was full
  // Idle release: the log's ticks (idle_release events), and the ticks the replay made itself
  // (simulated from the events' times, when the replayed idle settings differ from the log's).
  std::uint64_t idle_release_events = 0;
  std::uint64_t idle_ticks_simulated = 0;
  // The ticks of either kind that gave memory back (a pool's reserved bytes went down), and the
  // bytes they gave back: what idle release did in the replay (cudapool tune's cost of it).
  std::uint64_t idle_releases = 0;
  std::uint64_t idle_released_bytes = 0;
};

// Memory held over the log's time span (the events' t_ns, first to last), summed over the pools:
// the time-weighted mean of reserved bytes, besides the peak the statistics hold.
struct HeldOverTime {
  std::uint64_t first_t_ns = 0;
  std::uint64_t last_t_ns = 0;
  long double reserved_byte_ns = 0;  // the integral of reserved bytes over time
  std::uint64_t span_ns() const { return last_t_ns - first_t_ns; }
  // The mean reserved bytes over the span; reserved_now when the span is empty.
  double mean_reserved(std::uint64_t reserved_now) const {
    return span_ns() == 0 ? static_cast<double>(reserved_now)
                          : static_cast<double>(reserved_byte_ns / span_ns());
  }
};

class Replayer {
 public:
  explicit Replayer(ReplaySettings settings);

  // Feeds one line (without its newline); line_number counts from 1.
  void feed(std::uint64_t line_number, std::string_view line);
  // A line longer than kMaxLineBytes (log/read/line_reader.h): a malformed line.
  void feed_too_long(std::uint64_t line_number);
  // Reads a whole stream line by line, then finish().
  void feed_stream(std::istream& in);
  // Replays a log decoded elsewhere (recorded_log.h: LogDecoder), without parsing it again: the
  // same result as feed_stream of its file. For a fresh Replayer only: start_log with the log's
  // header (final: LogDecoder::read_header), replay_batch with each batch in order, then
  // end_of_log with the decoder's final tally, which ends with finish().
  void start_log(const LogHeader& header);
  void replay_batch(const EventBatch& batch);
  void end_of_log(const LogTally& tally);
  // A whole log read before (read_log): the three above.
  void replay(const RecordedLog& log);
  // Ends the replay: settles the conf and makes device 0 exist when no event named a device.
  void finish();

  // Whether any line was a header, an event (of any action) or the summary: else the input is
  // not a log at all. Whether a header was read, and whether any event reached the pools.
  // As the report has it: a header, an event or a summary (definition lines alone make no log).
  bool holds_a_log() const {
    return counts_.lines > counts_.blank_lines + counts_.malformed_lines + counts_.definition_lines;
  }
  bool has_header() const { return header_seen_; }
  bool replayed_nothing() const { return events_applied_ == 0; }

  const ReplayCounts& counts() const;
  const HeldOverTime& held() const { return held_; }
  // Reserved bytes of every live pool now.
  std::uint64_t reserved_now() const;
  // Whether the replay ticks the idle clock at the log's idle_release events (its idle settings
  // are the log's) rather than at times it simulates; known once the conf is settled.
  bool idle_ticks_from_log() const { return idle_from_log_; }
  const std::vector<Problem>& problems() const { return problems_; }
  // The conf string in effect and where it came from ("--conf", "log header", "default").
  const std::string& conf() const { return conf_; }
  const std::string& conf_origin() const { return conf_origin_; }
  const std::vector<std::string>& conf_diagnostics() const { return conf_diagnostics_; }
  // Devices seen, with their pools (in device order). A device may have several pools, one per
  // context of the logged process ("ctx"): pool() is its first context's, stats() the sum over
  // all of them (as the summary line sums the shim's pools of a device).
  std::vector<int> devices() const;
  const pool::DevicePool& pool(int device) const;
  // Every live pool with its device, context and simulated device (fuzzing, tests).
  template <class Fn>
  void for_each_pool(Fn&& fn) const {
    for (const auto& [key, d] : devices_) fn(device_of(key), context_of(key), *d.pool, *d.backend);
  }
  pool::DeviceStats stats(int device) const;
  std::uint64_t device_memory(int device) const;
  // Bit i: settings.shadows[i] would have replayed otherwise (a decision of any pool told it
  // apart); the others replay exactly alike.
  std::uint64_t parted() const { return shadows_ ? shadows_->parted() : 0; }
  bool watching() const { return shadows_ && shadows_->watching(); }

 private:
  struct Device {
    std::unique_ptr<pool::SimulatedBackend> backend;
    std::unique_ptr<pool::DevicePool> pool;
    // Log pointer -> a nonzero number; a log pointer is any 64-bit value but ~0 (reserved).
    using IdMap = pool::ProbeMap<std::uint64_t, pool::AnyKeys>;
    IdMap live;    // log pointer -> the pool's handle of its block (pool::Block*)
    IdMap failed;  // log pointers whose alloc failed -> 1
    // A free_requested whose free_completed may follow as the device's next pool event (then
    // the block came back at once); otherwise it was held behind a reuse fence.
    std::uint64_t held_log_ptr = 0;
    std::uint64_t held_handle = 0;  // its block's handle
    LogEvent held_source;           // the held free's event (its time and thread, for --write-log)
    // Log pointer of a block behind a fence -> the simulated fence, passed (and the block taken
    // back) at the log's free_completed for it.
    IdMap fenced;
    std::size_t slot = 0;  // its address range (kPoolSpaceBase + slot * kPoolSpan)
  };

  // Pools are keyed by device and context number (below 2^16 and 2^8): device << 16 | context.
  using PoolKey = long long;
  static PoolKey key_of(int device, int context) {
    return static_cast<PoolKey>(device) << 16 | context;
  }
  static int device_of(PoolKey key) { return static_cast<int>(key >> 16); }
  static int context_of(PoolKey key) { return static_cast<int>(key & 0xffff); }

  void settle_conf();
  log::HeaderInfo written_header(const config::ParseResult& parsed) const;  // of --write-log
  Device& device(int id, int context) {  // pools rarely change from one event to the next
    const PoolKey key = key_of(id, context);
    return key == last_key_ ? *last_device_ : other_device(key);
  }
  Device& other_device(PoolKey key);  // found or made
  const Device& first_pool_of(int device) const;
  Device* last_device_ = nullptr;
  PoolKey last_key_ = -1;
  void apply(std::uint64_t line_number, const LogEvent& event);
  // Before an event at t_ns: the reserved bytes held since the last event, and the idle clock's
  // simulated ticks due by t_ns (idle release on, and not ticked from the log).
  void advance_time(std::uint64_t t_ns);
  // One tick of d's idle clock (logged: at a log's idle_release event), counted in counts_.
  void idle_tick(Device& d, bool logged);
  // Recorded events, with the line problems among them (both in line order) kept in line order.
  void apply_recorded(const std::vector<RecordedEvent>& events,
                      const std::vector<Problem>& problems);
  // Whether event's pool may be replayed: its device is one the header lists (when it lists
  // any), and it exists or one more may be made; else it is counted and noted once.
  bool admitted(std::uint64_t line_number, const LogEvent& event);
  // The problems that sum up skipped events, their totals filled in at finish().
  void note_once(std::size_t& index, std::uint64_t line_number, std::string what);
  void word_skip_notes();  // at finish()
  // Frees the held block of d: at once (its free_completed came next) or behind a fence.
  void release_held_free(Device& d, bool completed_at_once);
  void problem(std::uint64_t line_number, std::string what);
  // A context_dropped event: that context's pool (and its pointers) are forgotten, as the shim
  // forgot them; the next event of the same device and number starts a new pool.
  void drop_pool(PoolKey key);

  ReplaySettings settings_;
  std::unique_ptr<pool::SplitShadows> shadows_;  // settings_.shadows, watched by every pool
  LogEvent current_;                             // the event being applied (for --write-log)
  LogHeader header_;
  bool conf_settled_ = false;
  config::Options options_;
  std::string conf_;
  std::string conf_origin_;
  std::vector<std::string> conf_diagnostics_;
  std::map<PoolKey, Device> devices_;
  // Segment placement counts of the devices dropped so far (counts() adds the live ones).
  std::uint64_t dropped_scripted_segments_ = 0;
  bool dropped_script_dropped_ = false;
  mutable ReplayCounts counts_;
  std::vector<Problem> problems_;
  bool header_seen_ = false;
  bool event_seen_ = false;  // an event line (any action) or the summary: a later header is ignored
  DefinedIds defined_;       // the ids of Python frames and stacks defined: a second one is listed
  std::uint64_t events_applied_ = 0;
  HeldOverTime held_;
  bool time_started_ = false;
  std::uint64_t reserved_total_ = 0;  // every pool's reserved bytes, kept by apply()
  bool idle_from_log_ = false;
  std::uint64_t next_idle_tick_ns_ = 0;  // the next simulated tick
  std::uint64_t line_ = 0;               // the line of the event being applied
  std::bitset<kMaxPools> slots_;
  std::uint64_t dropped_address_refusals_ = 0;
  static constexpr std::size_t kNotNoted = ~std::size_t{0};
  std::size_t unlisted_problem_ = kNotNoted, pool_limit_problem_ = kNotNoted;
  std::vector<bool> unlisted_seen_;  // device -> an event of it was skipped
  std::uint64_t unlisted_devices_ = 0;
};

}  // namespace cudapool::replay
