// SPDX-License-Identifier: Apache-2.0
// tools/replay/replayer.cpp: see replayer.h. The lines and the events; the pools:
// replayer_pools.cpp.
#include "tools/replay/replayer.h"

#include "config/describe.h"

#include <cstdio>
#include <iterator>
#include <sstream>
#include <stdexcept>

#include "config/parse.h"
#include "log/read/line_reader.h"

namespace cudapool::replay {

namespace {
std::string hex(std::uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
// The pool's handle kept in Device::live as a number (pools tracked by handle).
pool::Block* handle_of(std::uint64_t kept) {
  return reinterpret_cast<pool::Block*>(static_cast<std::uintptr_t>(kept));
}

}  // namespace

Replayer::Replayer(ReplaySettings settings) : settings_(std::move(settings)) {
  if (settings_.shadows.empty()) return;
  shadows_ = std::make_unique<pool::SplitShadows>();
  for (const pool::SplitLimits& limits : settings_.shadows) {
    if (!shadows_->add(limits)) {
      throw std::invalid_argument("replay: more than " + std::to_string(pool::SplitShadows::kMax) +
                                  " split limits watched");
    }
  }
}

void Replayer::settle_conf() {
  // The conf is fixed by the first event: the header (if any) comes before it.
  if (conf_settled_) return;
  conf_settled_ = true;
  if (settings_.conf) {
    conf_ = *settings_.conf;
    conf_origin_ = "--conf";
  } else if (header_.conf) {
    conf_ = *header_.conf;
    conf_origin_ = "log header";
  } else {
    conf_origin_ = "default";
  }
  const config::ParseResult parsed = config::parse_conf(conf_);
  options_ = parsed.options;
  // The log's idle_release events are the ticks of a run with these idle settings.
  const config::Options logged = config::parse_conf(header_.conf.value_or("")).options;
  idle_from_log_ = options_.idle_release_ms != 0 &&
                   logged.idle_release_ms == options_.idle_release_ms &&
                   logged.idle_release_floor == options_.idle_release_floor;
  for (const auto& d : parsed.diagnostics) conf_diagnostics_.push_back(d.message());
  if (settings_.write_log != nullptr) settings_.write_log->start(written_header(parsed));
}

log::HeaderInfo Replayer::written_header(const config::ParseResult& parsed) const {
  log::HeaderInfo h;
  h.version = settings_.version;
  h.executable = "cudapool-replay";
  h.argv = settings_.argv;
  h.host = header_.host;
  h.pid = header_.pid;
  h.start_unix_ns = header_.start_unix_ns;
  h.start_t_ns = header_.start_t_ns;
  h.conf = conf_;
  h.conf_source = "cudapool-replay " + conf_origin_;
  for (const config::EffectiveSetting& s : config::describe(parsed)) {
    h.options.emplace_back(s.name, log::setting_json(s));
  }
  log::DeviceInfo device;
  device.name = "simulated device (cudapool-replay)";
  for (const auto& [id, memory] : header_.device_memory) {
    device.id = id;
    device.total_memory = memory;
    h.devices.push_back(device);
  }
  return h;
}

void Replayer::problem(std::uint64_t line_number, std::string what) {
  if (problems_.size() < kMaxProblemsKept)
    problems_.push_back(Problem{line_number, std::move(what)});
}

void Replayer::feed(std::uint64_t line_number, std::string_view line) {
  ++counts_.lines;
  // Only the first header counts, and only before any event or the summary (as in the report).
  const bool header_ignored = header_seen_ || event_seen_;
  const ParsedLine parsed = parse_log_line(line, header_ignored ? nullptr : &header_);
  switch (parsed.kind) {
    case LineKind::kBlank:
      ++counts_.blank_lines;
      return;
    case LineKind::kHeader:
      ++counts_.other_lines;
      if (header_seen_) {
        problem(line_number, "a second header: ignored");
      } else if (event_seen_) {
        problem(line_number, "a header after events: ignored");
      }
      header_seen_ = true;
      return;
    case LineKind::kMalformed:
      ++counts_.malformed_lines;
      problem(line_number, "malformed line: " + parsed.problem);
      return;
    case LineKind::kDefinition:  // a Python stack's frame or stack: not an event
      ++counts_.other_lines;
      ++counts_.definition_lines;
      if (!defined_.first(parsed.definition, parsed.definition_id)) {
        problem(line_number, second_definition(parsed.definition, parsed.definition_id));
      }
      return;
    case LineKind::kEvent:
      event_seen_ = true;
      if (parsed.event.kind == EventKind::kOther) {
        ++counts_.other_lines;
        return;
      }
      settle_conf();
      apply(line_number, parsed.event);
      return;
  }
}

void Replayer::release_held_free(Device& d, bool completed_at_once) {
  const std::uint64_t log_ptr = d.held_log_ptr;
  const std::uint64_t handle = d.held_handle;
  d.held_log_ptr = d.held_handle = 0;
  PoolLogWriter* const w = settings_.write_log;
  if (w != nullptr) w->at(d.held_source);  // the free's own time and thread, not the next event's
  if (!completed_at_once) {
    ++counts_.fenced_frees;
    d.fenced.insert(log_ptr, d.backend->fence_next_free());
  }
  d.pool->free_handle(handle_of(handle));
  if (w != nullptr) w->at(current_);
}

void Replayer::apply(std::uint64_t line_number, const LogEvent& e) {
  if (settings_.write_log != nullptr) {
    current_ = e;
    settings_.write_log->at(e);
  }
  if (!admitted(line_number, e)) return;
  ++events_applied_;
  line_ = line_number;
  // Time first, for every event: the memory a dropped pool held counts up to its drop.
  advance_time(e.t_ns);
  if (e.kind == EventKind::kContextDropped) {  // the device's pool, held free included, is gone
    ++counts_.contexts_dropped;
    drop_pool(key_of(e.device, e.ctx));
    return;
  }
  Device& d = device(e.device, e.ctx);
  // Every pool event of the device settles a held free (pass-through events are kOther and never
  // come here: another thread's can fall between a free_requested and its free_completed).
  if (d.held_handle != 0) {
    const bool completes = e.kind == EventKind::kFreeCompleted && e.ptr == d.held_log_ptr;
    release_held_free(d, completes);
    if (completes) {
      ++counts_.free_completed_events;
      return;
    }
  }
  switch (e.kind) {
    case EventKind::kAlloc: {
      ++counts_.allocs;
      if (e.size == 0) {
        ++counts_.zero_size_allocs;
        return;
      }
      if (e.ptr == ~std::uint64_t{0}) {
        ++counts_.reserved_pointer_allocs;
        problem(line_number, "alloc of the reserved pointer 0xffffffffffffffff: skipped");
        return;
      }
      std::uint64_t* const live = d.live.claim(e.ptr);
      if (live == nullptr) {
        ++counts_.duplicate_allocs;
        problem(line_number, "alloc of " + hex(e.ptr) + ", which is still allocated: skipped");
        return;
      }
      ++counts_.events_replayed;
      if (d.failed.size() != 0) d.failed.erase(e.ptr);  // (a lookup, even of an empty map)
      const pool::AllocResult r = d.pool->malloc(e.size, e.stream);
      d.backend->drop_refusals();  // refusals logged before this request were for it
      if (r.status == pool::AllocStatus::kOk) {
        *live = reinterpret_cast<std::uintptr_t>(r.handle);
      } else {
        d.live.erase(e.ptr);
        ++counts_.failed_allocs;
        d.failed.insert(e.ptr, 1);
      }
      return;
    }
    case EventKind::kFree: {
      ++counts_.frees;
      const std::uint64_t ours = e.ptr == ~std::uint64_t{0} ? 0 : d.live.erase(e.ptr);
      if (ours == 0) {
        if (e.ptr != ~std::uint64_t{0} && d.failed.erase(e.ptr) != 0) {
          ++counts_.frees_of_failed_allocs;
        } else {
          ++counts_.unknown_frees;
          problem(line_number, "free of " + hex(e.ptr) + ", which is not allocated");
        }
        return;
      }
      ++counts_.events_replayed;
      if (header_.fences_logged) {
        d.held_log_ptr = e.ptr;
        d.held_handle = ours;
        d.held_source = e;
      } else {
        d.pool->free_handle(handle_of(ours));
      }
      return;
    }
    case EventKind::kFreeCompleted: {
      ++counts_.free_completed_events;
      // The fence of an earlier free passed and the run took the block back here (the shim writes
      // free_completed as the block comes back, before it merges): so does the replay. Taken back
      // at the pool's next request instead, the blocks whose free_completed events came together
      // (two polls in one allocation) came back in the order of their frees, not the logged run's,
      // and merged otherwise (found by tests/unit/test_replay_fence_order.cpp).
      if (const std::uint64_t fence = d.fenced.erase(e.ptr); fence != 0) {
        d.backend->pass_fence(fence);
        d.pool->settle_passed_fences();
      }
      return;
    }
    case EventKind::kPoolOther:
      ++counts_.other_lines;
      return;
    case EventKind::kOom: {
      ++counts_.oom_events;
      ++counts_.events_replayed;
      if (e.size == 0) return;
      const pool::AllocResult r = d.pool->malloc(e.size, e.stream);
      d.backend->drop_refusals();
      if (r.status == pool::AllocStatus::kOk) {
        // The simulated device had room where the real one did not: note it and give it back.
        ++counts_.oom_not_reproduced;
        problem(line_number, "oom of " + std::to_string(e.size) + " bytes not reproduced");
        d.pool->free_handle(r.handle);
      }
      return;
    }
    case EventKind::kSegmentAlloc:
      ++counts_.segment_alloc_events;
      if (settings_.log_addresses) d.backend->script_segment_address(e.ptr, e.size);
      return;
    case EventKind::kSegmentRefused:
      ++counts_.segment_refused_events;
      // Only the logged run's own settings make the same requests: another setting's replay
      // models the device by its size alone.
      if (settings_.log_addresses && conf_ == header_.conf.value_or("")) {
        d.backend->script_refusal(e.size);
      }
      return;
    case EventKind::kContextDropped:  // handled above
      return;
    case EventKind::kEmptyCache:
      ++counts_.empty_cache_events;
      ++counts_.events_replayed;
      // The program's own empty_cache waits for the fences, as PyTorch's does; one asked from
      // outside (cudapool empty-cache) releases what is idle now and leaves fenced blocks be.
      if (e.requested_from_outside) {
        d.pool->release_idle_segments();
      } else {
        d.pool->empty_cache();
      }
      return;
    case EventKind::kIdleRelease:
      ++counts_.idle_release_events;
      if (idle_from_log_) {
        ++counts_.events_replayed;
        idle_tick(d, /*logged=*/true);
      }
      return;
    case EventKind::kOther:
      return;
  }
}

void Replayer::feed_too_long(std::uint64_t line_number) {
  ++counts_.lines;
  ++counts_.malformed_lines;
  problem(line_number, std::string("malformed line: ").append(too_long_problem()));
}

void Replayer::feed_stream(std::istream& in) {
  log::for_each_line(
      in, [&](std::uint64_t number, std::string_view line) { feed(number, line); },
      [&](std::uint64_t number) { feed_too_long(number); });
  finish();
}

void Replayer::start_log(const LogHeader& header) {
  header_ = header;
}

void Replayer::apply_recorded(const std::vector<RecordedEvent>& events,
                              const std::vector<Problem>& problems) {
  auto p = problems.begin();
  if (!events.empty()) settle_conf();
  for (const RecordedEvent& e : events) {
    for (; p != problems.end() && p->line < e.line; ++p) problem(p->line, p->what);
    apply(e.line, e.event);
  }
  for (; p != problems.end(); ++p) problem(p->line, p->what);
}

void Replayer::replay_batch(const EventBatch& batch) {
  apply_recorded(batch.events, batch.problems);
}

void Replayer::end_of_log(const LogTally& tally) {
  header_seen_ = tally.has_header;
  counts_.lines += tally.lines;
  counts_.other_lines += tally.other_lines;
  counts_.definition_lines += tally.definition_lines;
  counts_.blank_lines += tally.blank_lines;
  counts_.malformed_lines += tally.malformed_lines;
  finish();
}

void Replayer::replay(const RecordedLog& log) {
  start_log(log.header);
  apply_recorded(log.events, log.problems);
  end_of_log(log);
}

void Replayer::finish() {
  settle_conf();
  // A free whose free_completed never came was still behind its fence at the end of the log.
  for (auto& [id, d] : devices_) {
    if (d.held_handle != 0) release_held_free(d, false);
  }
  if (devices_.empty()) device(0, 0);
  word_skip_notes();
}

const ReplayCounts& Replayer::counts() const {
  counts_.segments_at_log_address = dropped_scripted_segments_;
  counts_.log_addresses_dropped = dropped_script_dropped_;
  counts_.address_space_refusals = dropped_address_refusals_;
  for (const auto& [id, d] : devices_) {
    counts_.segments_at_log_address += d.backend->scripted_segments();
    counts_.log_addresses_dropped |= d.backend->script_dropped();
    counts_.address_space_refusals += d.backend->address_refusals();
  }
  return counts_;
}

}  // namespace cudapool::replay
