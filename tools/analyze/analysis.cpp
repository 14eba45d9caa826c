// SPDX-License-Identifier: Apache-2.0
// tools/analyze/analysis.cpp: see analysis.h. The loop is reader.py's LogReader.__iter__ and
// accounting.py's first_pass() in one, with layout.py's and the page's hooks at the same event.
#include "tools/analyze/analysis.h"

#include "log/read/line_reader.h"
#include "tools/analyze/line_checks.h"

namespace cudapool::analyze {

namespace {

using A = log::LogAction;

// timeline.py MARKED (STATE_ACTIONS: changes_state, device_layout.h).
bool marks_a_moment(int action) {
  return action == action_id(A::kOom) || action == action_id(A::kEmptyCache) ||
         action == action_id(A::kSegmentRefused);
}

}  // namespace

void LogAnalysis::problem(std::uint64_t line, std::string what, bool malformed) {
  ++problem_count_;
  if (malformed) ++malformed_;
  if (problems_.size() < kMaxProblems) problems_.push_back(Problem{line, std::move(what)});
}

std::string LogAnalysis::first_problem_text() const {
  if (problems_.empty()) return "";
  return "line " + std::to_string(problems_[0].line) + ": " + problems_[0].what;
}

std::optional<double> LogAnalysis::seconds(std::uint64_t t_ns) const {
  if (!first_t_) return std::nullopt;
  return seconds_between(t_ns, *first_t_);
}

bool LogAnalysis::no_free_completed(int dev) const {
  const auto it = devices_.find(dev);
  return it != devices_.end() && it->second->state.no_free_completed();
}

Device& LogAnalysis::device(int dev) {
  if (dev == last_dev_) return *last_device_;
  auto& slot = devices_[dev];
  if (!slot) {
    slot = std::make_unique<Device>(dev);
    slot->held.start(*first_t_);  // the device held nothing from the log's first event on
  }
  last_dev_ = dev;
  last_device_ = slot.get();
  return *slot;
}

void LogAnalysis::feed_too_long(std::uint64_t line_number) {
  lines_ = line_number;
  pool_decision_ = false;
  problem(
      line_number,
      "malformed: longer than 64 MiB (" + std::to_string(cudapool::log::kMaxLineBytes) + " bytes)",
      true);
}

void LogAnalysis::feed(std::uint64_t line_number, std::string_view text) {
  lines_ = line_number;
  const Line& l = decoder_.decode(text);
  pool_decision_ = false;
  if (watch_pool_decisions && decoder_.object()) {
    const std::string* action = decoder_.action();
    pool_decision_ =
        action != nullptr && (*action == "segment_alloc" || *action == "segment_map" ||
                              (*action == "alloc" && decoder_.raw().block_size.has_value()));
  }
  switch (l.kind) {
    case LineKind::kBlank:
      ++blank_lines_;
      return;
    case LineKind::kMalformed:
      problem(line_number, l.problem, true);
      last_malformed_ = line_number;
      last_malformed_if_last_ = l.problem_if_last;
      return;
    case LineKind::kHeader:
      header_line(line_number, *l.object);
      return;
    case LineKind::kSummary:
      summary_line(line_number, *l.object);
      return;
    case LineKind::kEvent:
      event_line(line_number, l.event);
      return;
    case LineKind::kDefinition:  // a Python frame or stack: kept, not an event
      if (std::string what = python_.define(l.definition); !what.empty()) {
        problem(line_number, std::move(what));
      }
      return;
  }
}

void LogAnalysis::feed_event(std::uint64_t line_number, const Event& e) {
  lines_ = line_number;
  pool_decision_ = false;
  event_line(line_number, e);
}

void LogAnalysis::event_line(std::uint64_t line_number, const Event& e) {
  ++events_;
  if (summary_) ++events_after_summary_;
  if (!gate_.admit(e.dev, line_number)) return;
  const std::optional<JsonField>* python = e.raw != nullptr ? &e.raw->python_stack : nullptr;
  if (python != nullptr && *python && e.action == action_id(A::kAlloc)) {
    // Its Python stack, when python_stack is an unsigned integer naming one defined before it.
    std::string why;
    const auto id = (*python)->kind == replay::JsonKind::kNumber
                        ? uint_field("python_stack", **python, &why)
                        : std::nullopt;
    Event with = e;
    with.python = id ? python_.stack(*id) : nullptr;
    event(line_number, with);
    if (hook) hook->event(line_number, with, last_device_->state);
    return;
  }
  event(line_number, e);
  if (hook) hook->event(line_number, e, last_device_->state);
}

void LogAnalysis::header_line(std::uint64_t line, JsonValue obj) {
  const JsonValue* schema = obj.find("schema");
  if (schema == nullptr || !schema->is_string() || schema->text.rfind("cudapool.log/", 0) != 0) {
    problem(line,
            "malformed: schema " + (schema ? py_repr(*schema) : "None") + " is not cudapool.log/N",
            true);
    return;
  }
  if (header_) {
    problem(line, "a second header line: ignored");
    return;
  }
  if (events_ != 0 || summary_) {
    problem(line, "a header line after events: ignored");
    return;
  }
  if (line != 1)
    notes_.push_back("the header is on line " + std::to_string(line) + ", not the first line");
  if (schema->text != "cudapool.log/1") {
    notes_.push_back("schema " + schema->text +
                     ": this report reads cudapool.log/1 (fields it does not know are ignored)");
  }
  check_header(
      obj, [&](const std::string& what) { problem(line, what); }, gate_);
  header_ = std::move(obj);
  header_line_ = line;
}

void LogAnalysis::summary_line(std::uint64_t line, JsonValue obj) {
  if (summary_) {
    problem(line, "a second summary line: ignored");
    return;
  }
  check_summary(
      obj, [&](const std::string& what) { problem(line, what); }, gate_);
  summary_ = std::move(obj);
  summary_line_ = line;
}

void LogAnalysis::event(std::uint64_t line, const Event& e) {
  if (!first_t_) {
    first_t_ = e.t_ns;
    clock_ = e.t_ns;
    held_.sum.start(e.t_ns);
  }
  last_t_ = e.t_ns;
  if (e.t_ns > clock_) clock_ = e.t_ns;
  Device& dv = device(e.dev);
  DeviceState& d = dv.state;
  ++d.events;
  if (last_seq_ && static_cast<Figure>(e.seq) != static_cast<Figure>(*last_seq_) + 1) {
    // Not a gap where events of devices not taken lie between the two (each is in the gap
    // after it).
    const std::uint64_t skipped = gate_.skipped_events() - skipped_seen_;
    skipped_seen_ += skipped;
    if (static_cast<Figure>(e.seq) != static_cast<Figure>(*last_seq_) + 1 + skipped) {
      if (gaps_.count++ == 0) gaps_ = SeqGaps{1, line, *last_seq_, e.seq};
    }
  }
  last_seq_ = e.seq;
  if (e.action >= 0) {
    ++action_counts_[static_cast<std::size_t>(e.action)];
  } else if (const auto it = unknown_actions_.find(std::string(e.action_name));
             it != unknown_actions_.end()) {
    ++it->second;
  } else if (unknown_actions_.size() < kMaxUnknownActions) {
    unknown_actions_.emplace(std::string(e.action_name), 1);
  } else {
    ++unknown_action_names_dropped_;
  }

  const bool alloc = e.action == action_id(A::kAlloc);
  std::uint32_t bt = 0;
  const std::optional<JsonField>& backtrace = e.raw->backtrace;
  if (alloc && backtrace && backtrace->kind == replay::JsonKind::kNested &&
      backtrace->value[0] == '[') {
    bt = backtraces_.hold(backtrace->value);
  }
  const Accounted moved =
      account(d, e, line, bt, backtraces_,
              [&](std::uint64_t l, std::string what) { problem(l, std::move(what)); });
  std::int32_t site = -1;
  if (alloc) {
    if (e.cache_hit) ++cache_hits_;
    if (options_.request_sizes) {
      if (const auto it = size_counts_.find(e.size); it != size_counts_.end()) {
        ++it->second;
      } else if (size_counts_.size() < kMaxRequestSizes) {
        size_counts_.emplace(e.size, 1);
      } else {
        ++sizes_not_counted_;
      }
    }
    const LargeRequest r{e.size, line, e.seq, e.t_ns, e.dev};
    if (largest_.size() < kTop) {
      largest_.push(r);
    } else if (e.size > largest_.top().size) {
      largest_.pop();
      largest_.push(r);
    }
    if (options_.sites && e.python != nullptr) {
      site = sites_.python_site(*e.python);
      sites_.count(site, e.block_size);
    } else if (options_.sites && backtrace) {
      site = sites_.site(backtrace->value);
      sites_.count(site, e.block_size);
    }
  } else if (e.action == action_id(A::kOom) && ooms_.size() < kMaxPageOoms) {
    ooms_.push_back(read_oom(e));
    const OomRecord& o = ooms_.back();
    if (ooms_.size() <= kTop && !o.malformed.empty()) {
      problem(line, "oom event: " + o.malformed + ": its explanation is left out");
    }
  }
  dv.layout.event(e, site);
  if (moved.new_reserved_peak) dv.layout.reserved_peak();
  if (moved.new_allocated_peak) dv.layout.allocated_peak();
  held_.follow(dv.held, d.allocated_bytes.current, d.reserved_bytes.current, clock_, e.seq, e.t_ns);

  DeviceTimeline& tl = dv.timeline;
  tl.last_line = line;
  if (changes_state(e.action)) {
    ++tl.changes;
    const Figure a = d.allocated_bytes.current, r = d.reserved_bytes.current;
    tl.samples.add(e.t_ns, Values{a, r, d.active_bytes.current, r - a});
  } else if (marks_a_moment(e.action) && marks_ < kMaxMarks) {
    ++marks_;
    tl.marks_of(e.action_name).push_back(e.t_ns);
  }
}

void LogAnalysis::finish(const LastLine& last, const std::string& cut) {
  if (!last.empty && !last.newline && last_malformed_ == lines_ &&
      !last_malformed_if_last_.empty() && !problems_.empty() && problems_.back().line == lines_) {
    problems_.back().what = last_malformed_if_last_;
  }
  for (std::string& note : gate_.notes()) notes_.push_back(std::move(note));
  if (first_t_) {  // the last figures hold until the last event
    for (auto& [dev, d] : devices_) d->held.finish(clock_);
    held_.sum.finish(clock_);
  }
  ending_ =
      ending(last, lines_, summary_ ? std::optional<std::uint64_t>(summary_line_) : std::nullopt,
             gaps_, cut, requests_only_);
  if (hook) hook->finish();
}

}  // namespace cudapool::analyze
