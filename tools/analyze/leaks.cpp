// SPDX-License-Identifier: Apache-2.0
// tools/analyze/leaks.cpp: the report's leaks (report.h leak_report), the port of
// tests/oracle/leaks.py: the blocks alive at the end of the events are what is
// counted; the summary line's leaks (the pool's own list at exit, with symbolized stacks) are
// what is listed, each entry checked against the events: one the events never allocated there or
// freed, of another size or seq, listed twice, or of a device whose events were skipped, is
// marked and noted, and counted only as the events have it. And the blocks alive at the end
// grouped by site and size, each group long-lived, growing or neither (group_alive).
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "tools/analyze/report.h"

namespace cudapool::analyze {

namespace {

constexpr std::size_t kShown = 5;  // disagreeing entries named in a note

JsonValue number(Figure v) {
  return JsonValue::number_of(figure_text(v));
}

JsonValue field(const JsonValue& leak, const char* name) {
  const JsonValue* v = leak.find(name);
  return v == nullptr ? JsonValue{} : *v;
}

// "?" for null, else the value as Python's %s prints it.
std::string shown(const JsonValue& v) {
  if (v.is_null()) return "?";
  if (v.is_string()) return v.text;
  return v.is_integer() ? v.integer_text() : v.text;
}

struct AliveBlock {
  int dev;
  std::uint64_t ptr;
  const LiveBlock* block;
};

// The kind of a group of blocks alive at the end (report.h AliveGroup).
const char* kind_of(const LogAnalysis& a, const AliveGroup& g) {
  const std::uint64_t run = a.first_t_ && a.last_t_ ? *a.last_t_ - *a.first_t_ : 0;
  if (g.count >= kGrowingCount && run > 0 && (g.last_t - g.first_t) * 2 >= run) return "growing";
  const auto it = a.devices_.find(g.dev);
  const auto& peak = it == a.devices_.end() ? std::nullopt : it->second->state.peak_allocated;
  if (peak && g.last_seq <= peak->seq) return "long-lived";
  return "after the peak";
}

// The groups of the blocks alive at the end (alive: by device, then as allocated).
void group_alive(const LogAnalysis& a, const std::vector<AliveBlock>& alive, LeaksReport& out) {
  std::map<std::tuple<int, std::uint32_t, std::uint64_t>, AliveGroup> groups;
  for (const AliveBlock& b : alive) {
    AliveGroup& g = groups[{b.dev, b.block->backtrace, b.block->block_size}];
    if (g.count == 0) {
      g.dev = b.dev;
      g.backtrace = b.block->backtrace;
      g.block_size = b.block->block_size;
      g.first_seq = b.block->seq;
      g.first_t = b.block->t_ns;
    }
    ++g.count;
    g.bytes += b.block->block_size;
    g.first_seq = std::min(g.first_seq, b.block->seq);
    g.last_seq = std::max(g.last_seq, b.block->seq);
    g.first_t = std::min(g.first_t, b.block->t_ns);
    g.last_t = std::max(g.last_t, b.block->t_ns);
  }
  for (auto& [key, g] : groups) {
    g.kind = kind_of(a, g);
    const std::size_t k = g.kind == "long-lived" ? 0 : g.kind == "growing" ? 1 : 2;
    ++out.kinds.groups[k];
    out.kinds.blocks[k] += g.count;
    out.kinds.bytes[k] += g.bytes;
    out.groups.push_back(g);
  }
  std::stable_sort(out.groups.begin(), out.groups.end(),
                   [](const AliveGroup& x, const AliveGroup& y) {
                     return x.bytes != y.bytes ? x.bytes > y.bytes : x.first_seq < y.first_seq;
                   });
}

}  // namespace

std::optional<std::uint64_t> LeakEntry::counted_block_size() const {
  if (checked && disagrees) {
    if (!counted) return std::nullopt;
    return events_block_size;
  }
  const auto v = block_size.integer();
  if (!v) return std::nullopt;
  return static_cast<std::uint64_t>(*v);
}

LeaksReport leak_report(const LogAnalysis& a, std::vector<std::string>& notes) {
  LeaksReport out;
  std::vector<AliveBlock> alive;
  for (const auto& [dev, d] : a.devices_) {
    d->state.blocks.for_each([&](std::uint64_t ptr, const LiveBlock& b) {
      if (b.live) alive.push_back(AliveBlock{dev, ptr, &b});
    });
  }
  // The Python reader's order: by device, then as allocated.
  std::sort(alive.begin(), alive.end(), [](const AliveBlock& x, const AliveBlock& y) {
    return x.dev != y.dev ? x.dev < y.dev : x.block->line < y.block->line;
  });
  out.from_summary = a.summary_.has_value();
  if (!out.from_summary) out.last_seq = a.last_seq_;
  out.count = alive.size();
  group_alive(a, alive, out);
  for (const AliveBlock& b : alive) {
    out.bytes += b.block->block_size;
    out.requested_bytes += b.block->size;
  }
  const auto entry_of = [&](const AliveBlock& b) {
    LeakEntry e;
    e.dev = number(b.dev);
    e.ptr = JsonValue::string_of(hex_text(b.ptr));
    e.size = number(b.block->size);
    e.block_size = number(b.block->block_size);
    e.seq = number(b.block->seq);
    e.t_ns = number(b.block->t_ns);
    e.time_s = a.seconds(b.block->t_ns);
    e.tid = number(b.block->tid);
    e.backtrace.type = JsonValue::Type::kArray;
    if (b.block->backtrace != 0) {
      if (auto bt = parse_json(a.backtraces_.text(b.block->backtrace))) e.backtrace = *bt;
    }
    return e;
  };
  if (!out.from_summary) {
    for (const AliveBlock& b : alive) out.entries.push_back(entry_of(b));
    std::stable_sort(out.entries.begin(), out.entries.end(),
                     [](const LeakEntry& x, const LeakEntry& y) {
                       const Figure xs = *x.seq.integer(), ys = *y.seq.integer();
                       return xs != ys ? xs < ys : *x.dev.integer() < *y.dev.integer();
                     });
    return out;
  }
  const JsonValue& summary = *a.summary_;
  std::set<std::pair<int, std::uint64_t>> claimed;
  std::vector<const LeakEntry*> disagree;
  if (const JsonValue* leaks = summary.find("leaks"); leaks != nullptr && leaks->is_array()) {
    for (const JsonValue& l : leaks->items) {
      LeakEntry e;
      e.dev = field(l, "dev");
      e.ptr = field(l, "ptr");
      e.size = field(l, "size");
      e.block_size = field(l, "block_size");
      e.seq = field(l, "seq");
      e.t_ns = field(l, "t_ns");
      e.tid = field(l, "tid");
      const auto t = e.t_ns.integer();
      if (t) e.time_s = a.seconds(static_cast<std::uint64_t>(*t));
      e.backtrace = field(l, "backtrace");
      if (!e.backtrace.is_array()) {
        e.backtrace = JsonValue{};
        e.backtrace.type = JsonValue::Type::kArray;
      }
      e.checked = true;
      // leaks.py check()
      const auto dev = e.dev.integer();
      const auto ptr = e.ptr.is_string() ? hex_value(e.ptr.text) : std::nullopt;
      e.disagrees = true;
      if (!dev || !ptr) {
        e.why = "its device or address is not known";
      } else if (a.gate_.skipped(static_cast<int>(*dev))) {
        e.why = "the events of its device were skipped";
      } else {
        const auto it = a.devices_.find(static_cast<int>(*dev));
        const LiveBlock* b = it == a.devices_.end() ? nullptr : it->second->state.blocks.find(*ptr);
        if (b == nullptr || !b->live) {
          e.why =
              "no block is alive there at the end of the events (never allocated there, or "
              "freed)";
        } else if (!claimed.emplace(static_cast<int>(*dev), *ptr).second) {
          e.why = "listed twice";
        } else {
          e.counted = true;
          e.events_size = b->size;
          e.events_block_size = b->block_size;
          const auto size = e.size.integer(), block_size = e.block_size.integer();
          const auto seq = e.seq.integer();
          if (!size || !block_size || *size != static_cast<Figure>(b->size) ||
              *block_size != static_cast<Figure>(b->block_size)) {
            e.why = "the events have it with " + std::to_string(b->size) +
                    " bytes requested, a block of " + std::to_string(b->block_size);
          } else if (seq && *seq != static_cast<Figure>(b->seq)) {
            e.why = "the events' block there was allocated at seq " + std::to_string(b->seq);
          } else {
            e.disagrees = false;
          }
        }
      }
      out.entries.push_back(std::move(e));
    }
  }
  for (const LeakEntry& e : out.entries) {
    if (e.disagrees) disagree.push_back(&e);
  }
  std::string named;
  for (std::size_t i = 0; i < disagree.size() && i < kShown; ++i) {
    const LeakEntry& e = *disagree[i];
    named += (i ? "; " : "") + std::string("dev ") + shown(e.dev) + " ptr " + shown(e.ptr) + ", " +
             shown(e.block_size) + " bytes: " + e.why;
  }
  // The writer lists them in the pool's order: oldest first reads better.
  std::stable_sort(out.entries.begin(), out.entries.end(),
                   [](const LeakEntry& x, const LeakEntry& y) {
                     const Figure xs = x.seq.integer().value_or(-1);
                     const Figure ys = y.seq.integer().value_or(-1);
                     if (xs != ys) return xs < ys;
                     return x.dev.integer().value_or(-1) < y.dev.integer().value_or(-1);
                   });
  std::array<Figure, 3> rest{0, 0, 0};
  for (const AliveBlock& b : alive) {
    if (claimed.count({b.dev, b.ptr}) != 0) continue;
    rest[0] += 1;
    rest[1] += b.block->size;
    rest[2] += b.block->block_size;
  }
  out.not_listed = rest;
  if (const JsonValue* omitted = summary.find("leaks_omitted");
      omitted != nullptr && omitted->is_object()) {
    out.omitted =
        std::array<Figure, 3>{*omitted->find("count")->integer(), *omitted->find("size")->integer(),
                              *omitted->find("block_size")->integer()};
  }
  out.disagreements = disagree.size();
  if (!disagree.empty()) {
    notes.push_back("the summary lists " + std::to_string(disagree.size()) +
                    " leak(s) that the events do not have as listed (" + named +
                    (disagree.size() > kShown ? "; ..." : "") +
                    "): each is counted as the events have it, or not at all");
  }
  if (out.omitted && *out.omitted != rest) {
    const auto& o = *out.omitted;
    notes.push_back("the summary counts " + figure_text(o[0]) +
                    " blocks alive at exit that it does not list (" + figure_text(o[1]) +
                    " bytes requested, " + figure_text(o[2]) + " in blocks); the events have " +
                    figure_text(rest[0]) + " such blocks (" + figure_text(rest[1]) +
                    " bytes requested, " + figure_text(rest[2]) +
                    " in blocks): the events' are counted");
  } else if (!out.omitted && rest[0] != 0) {
    notes.push_back("the events have " + figure_text(rest[0]) + " block(s) alive at exit (" +
                    figure_text(rest[2]) +
                    " bytes in blocks) that the summary's leaks do not list: counted");
  }
  return out;
}

}  // namespace cudapool::analyze
