// SPDX-License-Identifier: Apache-2.0
// tools/analyze/memviz_write.cpp: MemvizTrace::write (memviz_trace.h): the engine's "memviz"
// object of a log (docs/analysis-format.md, "memviz"): its header and summary, the distinct stacks
// (native frames, then a Python stack's frames in PyTorch's form), the native frames' symbols (from
// the modules' own files: symbolizer.h), and per device its trace, its
// segments and its blocks, in the order the Python pass keeps them. Not here: following the events
// (memviz_trace.cpp).
#include <set>
#include <string_view>

#include "tools/analyze/frames.h"
#include "tools/analyze/memviz_order.h"
#include "tools/analyze/memviz_trace.h"

namespace cudapool::analyze {

namespace {

using namespace memviz_order;

constexpr const char* kUnknownFile = "??";  // frames.py UNKNOWN_FILE: a Python frame not defined

}  // namespace

void MemvizTrace::write(JsonOut& out, const ExportInputs& in) const {
  const LogAnalysis& a = in.followed;
  const bool replayed = in.replayed;
  const std::string& cut = in.cut;
  out.begin_object();
  out.key("replayed").boolean(replayed);
  out.key("ended_early");
  if (cut.empty()) {
    out.null();
  } else {
    out.str(cut);
  }
  out.key("header");
  if (a.header_) {
    out.value(*a.header_);
  } else {
    out.null();
  }
  out.key("summary");
  if (a.summary_) {
    out.value(*a.summary_);
  } else {
    out.null();
  }
  out.key("first_t_ns").opt(a.first_t_);
  out.key("malformed").num(a.malformed_);
  out.key("device_notes").begin_array();
  for (const std::string& note : a.gate_.notes()) out.str(note);
  out.end_array();
  out.key("left_out").begin_array();
  for (const auto& [name, n] : left_out_) out.begin_array().str(name).num(n).end_array();
  out.end_array();
  out.key("stacks").begin_array();
  for (const Stack& frames : stacks_) {
    out.begin_array();
    for (const std::string& f : frames.native) out.str(f);
    if (frames.python != nullptr) {
      for (const PythonFrame* f : frames.python->frames) {  // PyTorch's snapshot frame form
        out.begin_object().key("filename").str(f->known ? f->file : kUnknownFile);
        out.key("line").num(f->line).key("name").str(f->known ? f->function : kUnknownFile);
        out.end_object();
      }
    }
    out.end_array();
  }
  out.end_array();
  // "symbols": what the modules' own files say of the stacks' native frames (frames.h,
  // symbolizer.h), {frame: [function, offset, file, line]} for the frames symbolized; the export
  // names those frames with them (frames.py).
  const Frames names(a.summary_ ? &*a.summary_ : nullptr);
  std::set<std::string_view> seen;
  out.key("symbols").begin_object();
  for (const Stack& stack : stacks_) {
    for (const std::string& f : stack.native) {
      if (!seen.insert(f).second) continue;
      if (const auto s = names.symbol(f)) {
        out.key(f).begin_array().str(s->function).num(s->offset).str(s->file);
        out.num(static_cast<std::uint64_t>(s->line)).end_array();
      }
    }
  }
  out.end_object();
  const auto region = [&out](const Region& r) {
    out.begin_array()
        .num(r.base)
        .num(r.size)
        .num(r.stream)
        .boolean(r.expandable)
        .num(r.first_map)
        .num(r.largest_block)
        .begin_array();
    for (const auto& [s, e] : r.ranges) {
      out.begin_array().num(static_cast<Figure>(s)).num(static_cast<Figure>(e)).end_array();
    }
    out.end_array().end_array();
  };
  out.key("devices").begin_array();
  for (const auto& dp : devices_) {
    const Device& d = *dp;
    out.begin_object();
    out.key("dev").num(d.dev);
    out.key("free_requested").num(d.free_requested);
    out.key("free_completed").num(d.free_completed);
    out.key("regions_seen").num(d.regions_seen);
    out.key("count").begin_array();
    for (const auto& [what, n] : d.count) out.begin_array().str(what).num(n).end_array();
    out.end_array();
    out.key("trace").begin_array();
    const std::uint64_t first = d.added - d.ring.size();
    for (std::uint64_t k = first; k < d.added; ++k) {
      const Entry& e = d.ring[max_entries_ == 0 ? k : k % max_entries_];
      out.begin_array()
          .str(log::action_name(static_cast<log::LogAction>(e.action)))
          .num(e.addr)
          .num(e.size)
          .num(e.stream)
          .num(e.t_ns)
          .num(static_cast<std::uint64_t>(e.frames))
          .str(kMetas[e.meta]);
      if (e.completed != 0) out.str(kMetas[e.completed - 1]);
      out.end_array();
    }
    out.end_array();
    out.key("segments").begin_array();
    for (const std::uint64_t k : in_order(
             d.segments, [](const std::shared_ptr<Region>&) { return true; }, region_order))
      region(*d.segments.at(k));
    out.end_array();
    out.key("expandable").begin_array();
    for (const std::uint64_t k : in_order(
             d.expandable, [](const std::shared_ptr<Region>&) { return true; }, region_order))
      region(*d.expandable.at(k));
    out.end_array();
    out.key("blocks").begin_array();
    for (const std::uint64_t p : in_order(
             d.blocks, [](const Block&) { return true; }, block_order)) {
      const Block& b = d.blocks.at(p);
      out.begin_array()
          .num(p)
          .num(b.size)
          .num(b.requested)
          .boolean(b.pending)
          .num(static_cast<std::uint64_t>(b.frames))
          .end_array();
    }
    out.end_array();
    out.end_object();
  }
  out.end_array();
  out.end_object();
}

}  // namespace cudapool::analyze
