// SPDX-License-Identifier: Apache-2.0
// tools/analyze/leaks_json.cpp: the blocks alive at exit in the report's JSON (its "leaks"
// object, its entries, its groups by site and size), declared in report_json.h. Not here: the
// figures (leaks.cpp, report.h), the rest of the report's JSON (report_json.cpp).
#include <algorithm>

#include "tools/analyze/frames.h"
#include "tools/analyze/report_json.h"

namespace cudapool::analyze {

namespace {

void figures3(JsonOut& out, const std::optional<std::array<Figure, 3>>& v) {
  if (!v) {
    out.null();
    return;
  }
  out.begin_object().key("count").num((*v)[0]).key("size").num((*v)[1]);
  out.key("block_size").num((*v)[2]).end_object();
}

}  // namespace

void write_leaks(JsonOut& out, const LogAnalysis& a, const LeaksReport& lk) {
  out.begin_object().key("source").str(lk.from_summary ? "summary" : "events");
  out.key("last_seq").opt(lk.last_seq).key("count").num(lk.count).key("bytes").num(lk.bytes);
  out.key("requested_bytes").num(lk.requested_bytes).key("entries").begin_array();
  for (const LeakEntry& e : lk.entries) write_leak_entry(out, e);
  out.end_array().key("listed").num(static_cast<std::uint64_t>(lk.entries.size()));
  out.key("not_listed");
  figures3(out, lk.not_listed);
  out.key("omitted");
  figures3(out, lk.omitted);
  out.key("disagreements").num(lk.disagreements);
  write_alive_groups(out, a, lk);
  out.end_object();
}

void write_alive_groups(JsonOut& out, const LogAnalysis& a, const LeaksReport& lk,
                        const Frames* frames) {
  out.key("by_site").begin_object().key("rule").str(kAliveRule).key("kinds").begin_object();
  for (std::size_t k = 0; k < 3; ++k) {
    out.key(kAliveKinds[k]).begin_object().key("groups").num(lk.kinds.groups[k]);
    out.key("blocks").num(lk.kinds.blocks[k]).key("bytes").num(lk.kinds.bytes[k]).end_object();
  }
  out.end_object().key("groups").begin_array();
  for (std::size_t i = 0; i < lk.groups.size() && i < kAliveGroupsListed; ++i) {
    const AliveGroup& g = lk.groups[i];
    out.begin_object().key("dev").num(g.dev).key("block_size").num(g.block_size);
    out.key("count").num(g.count).key("bytes").num(g.bytes).key("kind").str(g.kind);
    out.key("first_seq").num(g.first_seq).key("last_seq").num(g.last_seq);
    out.key("first_time_s").opt_real(a.seconds(g.first_t));
    out.key("last_time_s").opt_real(a.seconds(g.last_t)).key("backtrace");
    std::optional<JsonValue> bt;
    if (g.backtrace != 0) bt = parse_json(a.backtraces_.text(g.backtrace));
    if (!bt) {
      out.begin_array().end_array();
    } else if (frames == nullptr) {
      out.value(*bt);
    } else {
      out.begin_array();
      for (const JsonValue& f : bt->items) out.str(f.is_string() ? frames->text(f.text) : "?");
      out.end_array();
    }
    out.end_object();
  }
  out.end_array().key("groups_listed");
  out.num(static_cast<std::uint64_t>(std::min(lk.groups.size(), kAliveGroupsListed)));
  out.key("group_count").num(static_cast<std::uint64_t>(lk.groups.size())).end_object();
}

void write_leak_entry(JsonOut& out, const LeakEntry& e, const Frames* frames) {
  out.begin_object().key("dev").value(e.dev).key("ptr").value(e.ptr).key("size").value(e.size);
  out.key("block_size").value(e.block_size).key("seq").value(e.seq).key("t_ns").value(e.t_ns);
  out.key("time_s").opt_real(e.time_s).key("tid").value(e.tid);
  out.key("backtrace");
  if (frames == nullptr) {
    out.value(e.backtrace);
  } else {
    out.begin_array();
    for (const JsonValue& f : e.backtrace.items)
      out.str(f.is_string() ? frames->text(f.text) : "?");
    out.end_array();
  }
  if (e.checked) {
    out.key("events");
    if (!e.disagrees) {
      out.null();
    } else if (!e.counted) {
      out.begin_object().key("why").str(e.why).key("counted").boolean(false).end_object();
    } else {
      out.begin_object().key("counted").boolean(true).key("size").num(e.events_size);
      out.key("block_size").num(e.events_block_size).key("why").str(e.why).end_object();
    }
  }
  out.end_object();
}

}  // namespace cudapool::analyze
