// SPDX-License-Identifier: Apache-2.0
// tools/analyze/oom_figures.cpp: see oom_figures.h.
#include "tools/analyze/oom_figures.h"

#include "pool/oom.h"

namespace cudapool::analyze {

namespace {

constexpr pool::OomCause kCauses[] = {pool::OomCause::kFragmentation, pool::OomCause::kCap,
                                      pool::OomCause::kShortage, pool::OomCause::kLargeSegmentSize,
                                      pool::OomCause::kRoundup};

std::optional<pool::OomCause> cause_of(const std::string& name) {
  for (const pool::OomCause c : kCauses) {
    if (pool::oom_cause_name(c) == name) return c;
  }
  return std::nullopt;
}

}  // namespace

OomRecord read_oom(const Event& e) {
  OomRecord r{e.dev, e.size, e.seq, e.t_ns, std::nullopt, {}};
  const RawFields& raw = *e.raw;
  if (!raw.cause || raw.cause->kind != replay::JsonKind::kString) return r;
  const std::string cause =
      raw.cause->value_escaped ? replay::decode_json_string(raw.cause->value)
                               : std::string(raw.cause->value);
  if (!cause_of(cause)) return r;
  OomFigures f;
  f.cause = cause;
  f.requested = e.size;
  for (std::size_t i = 0; i < kOomFigures; ++i) {
    if (!raw.figures[i]) continue;
    std::string why;
    const auto v = uint_field(kOomFigureNames[i], *raw.figures[i], &why);
    if (!v) {
      r.malformed = why;
      return r;
    }
    f.values[i] = *v;
  }
  f.device_free_known = raw.figures[3].has_value();
  r.figures = f;
  return r;
}

std::vector<std::string> explain(const OomFigures& f, int dev) {
  pool::OomState s;
  s.requested = f.requested;
  s.rounded = f.values[0];
  s.segment_size = f.values[1];
  s.device_total = f.values[2];
  s.device_free = f.values[3];
  s.device_free_known = f.device_free_known;
  s.cap = f.values[4];
  s.reserved = f.values[5];
  s.allocated = f.values[6];
  s.free_blocks = f.values[7];
  s.largest_free_block = f.values[8];
  s.cause = *cause_of(f.cause);
  const std::string text = pool::explain_oom(s, dev);
  std::vector<std::string> out;
  constexpr std::string_view kPrefix = "cudapool: ";
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + start, end - start);
    if (line.substr(0, kPrefix.size()) == kPrefix) line.remove_prefix(kPrefix.size());
    out.emplace_back(line);
    start = end + 1;
  }
  return out;
}

void write_figures(JsonOut& out, const OomFigures& f) {
  out.begin_object().key("cause").str(f.cause).key("requested").num(f.requested);
  for (std::size_t i = 0; i < kOomFigures; ++i) out.key(kOomFigureNames[i]).num(f.values[i]);
  out.key("device_free_known").boolean(f.device_free_known).end_object();
}

}  // namespace cudapool::analyze
