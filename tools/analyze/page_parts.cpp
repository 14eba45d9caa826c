// SPDX-License-Identifier: Apache-2.0
// tools/analyze/page_parts.cpp: see page_parts.h.
#include "tools/analyze/page_parts.h"

#include <algorithm>
#include <map>

#include "tools/analyze/oom_figures.h"
#include "tools/analyze/report_json.h"
#include "tools/analyze/sites.h"

namespace cudapool::analyze {

namespace {

// A text cut at kMaxFrameText characters, as Frames::text cuts a native frame's.
std::string cut_frame(std::string text) {
  if (char_count(text) > kMaxFrameText)
    text = std::string(first_chars(text, kMaxFrameText)) + "...";
  return text;
}

std::vector<std::string> texts(const Frames& frames, const std::vector<std::string>& raw) {
  std::vector<std::string> out;
  out.reserve(raw.size());
  for (const std::string& f : raw) out.push_back(frames.text(f));
  return out;
}

}  // namespace

void write_page_ooms(JsonOut& out, const LogAnalysis& a) {
  out.key("ooms").begin_array();
  for (const OomRecord& o : a.ooms_) {
    out.begin_object().key("dev").num(o.dev).key("size").num(o.size).key("seq").num(o.seq);
    out.key("time_s").opt_real(a.seconds(o.t_ns)).key("cause");
    o.figures ? out.str(o.figures->cause) : out.null();
    out.key("figures");
    if (o.figures) {
      write_figures(out, *o.figures);
    } else {
      out.null();
    }
    out.key("explanation");
    if (o.figures) {
      write_lines(out, explain(*o.figures, o.dev));
    } else {
      out.begin_array().str(!o.malformed.empty()
                                ? "its figures are malformed (" + o.malformed + ")"
                                : "the event carries no explanation (not written by the shim)");
      out.end_array();
    }
    out.end_object();
  }
  out.end_array();
}

void write_page_leaks(JsonOut& out, const LogAnalysis& a, const Report& r, const Frames& frames,
                      std::size_t max_listed) {
  const LeaksReport& lk = r.leaks;
  out.key("leaks").begin_object().key("source").str(lk.from_summary ? "summary" : "events");
  out.key("count").num(lk.count).key("bytes").num(lk.bytes).key("last_seq").opt(lk.last_seq);
  out.key("listed").num(static_cast<std::uint64_t>(lk.entries.size())).key("not_listed");
  if (lk.not_listed) {
    out.begin_object().key("count").num((*lk.not_listed)[0]).key("size").num((*lk.not_listed)[1]);
    out.key("block_size").num((*lk.not_listed)[2]).end_object();
  } else {
    out.null();
  }
  out.key("entries").begin_array();
  for (std::size_t i = 0; i < lk.entries.size() && i < max_listed; ++i) {
    write_leak_entry(out, lk.entries[i], &frames);
  }
  out.end_array();
  // sites.py leak_groups(): by stack, only what the events bear out, the most bytes first.
  struct Group {
    std::vector<std::string> backtrace;
    std::size_t focus;
    std::uint64_t count = 0;
    Figure bytes = 0;
    JsonValue first_seq;
  };
  std::vector<Group> groups;
  std::map<std::vector<std::string>, std::size_t> index;
  for (const LeakEntry& e : lk.entries) {
    const auto block_size = e.counted_block_size();
    if (!block_size) continue;
    std::vector<std::string> key;
    for (const JsonValue& f : e.backtrace.items) key.push_back(f.is_string() ? f.text : "?");
    auto it = index.find(key);
    if (it == index.end()) {
      Group g;
      g.backtrace = texts(frames, key);
      g.focus = focus(g.backtrace);
      g.first_seq = e.seq;
      it = index.emplace(key, groups.size()).first;
      groups.push_back(std::move(g));
    }
    Group& g = groups[it->second];
    ++g.count;
    g.bytes += *block_size;
  }
  std::stable_sort(groups.begin(), groups.end(), [](const Group& x, const Group& y) {
    return x.bytes != y.bytes ? x.bytes > y.bytes : x.count > y.count;
  });
  out.key("groups").begin_array();
  for (std::size_t i = 0; i < groups.size() && i < kTopSites; ++i) {
    const Group& g = groups[i];
    out.begin_object().key("backtrace");
    write_lines(out, g.backtrace);
    out.key("focus").num(static_cast<std::uint64_t>(g.focus)).key("count").num(g.count);
    out.key("bytes").num(g.bytes).key("first_seq").value(g.first_seq).end_object();
  }
  out.end_array();
  write_alive_groups(out, a, lk, &frames);
  out.end_object();
}

void write_page_sites(JsonOut& out, const LogAnalysis& a, const Frames& frames) {
  const Sites& sites = a.sites_;
  std::vector<std::vector<std::string>> named;
  std::vector<std::size_t> focused;
  named.reserve(sites.size());
  for (std::size_t i = 0; i < sites.size(); ++i) {
    // A Python site: its Python frames, innermost first, named by its first user frame.
    if (const PythonStack* p = sites.python(static_cast<std::int32_t>(i))) {
      named.emplace_back();
      for (const PythonFrame* f : p->frames)
        named.back().push_back(cut_frame(python_frame_text(*f)));
      focused.push_back(python_focus(*p));
      continue;
    }
    named.push_back(texts(frames, sites.frames(static_cast<std::int32_t>(i))));
    focused.push_back(focus(named.back()));
  }
  out.key("sites").begin_object().key("frames").begin_array();
  for (const auto& t : named) write_lines(out, t);
  out.end_array().key("focus").begin_array();
  for (const std::size_t f : focused) out.num(static_cast<std::uint64_t>(f));
  out.end_array().key("python").begin_array();
  for (std::size_t i = 0; i < sites.size(); ++i) {
    out.boolean(sites.python(static_cast<std::int32_t>(i)) != nullptr);
  }
  out.end_array();
  std::vector<std::int32_t> order(sites.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int32_t>(i);
  const std::size_t top = std::min(kTopSites, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    [&](std::int32_t x, std::int32_t y) {  // Python sites first
                      return site_before(sites, x, y, sites.allocs(x), sites.allocs(y));
                    });
  out.key("frequent").begin_array();
  for (std::size_t k = 0; k < top; ++k) {
    out.begin_object().key("site").num(order[k]).key("count").num(sites.allocs(order[k]));
    out.key("bytes").num(sites.bytes(order[k])).end_object();
  }
  out.end_array().end_object();
}

}  // namespace cudapool::analyze
