// SPDX-License-Identifier: Apache-2.0
// tools/analyze/held_report.cpp: see held_report.h.
#include "tools/analyze/held_report.h"

#include <cstdio>
#include <cstdlib>

#include "tools/replay/bytes_arg.h"

namespace cudapool::analyze {

const char* const kLevelForms =
    "a fraction of the peak with a decimal point, 0 to 1 (0.5: half the peak reserved), or a "
    "size: bytes, or a number with a unit K, M, G or T, any case, with or without B or iB (512M, "
    "10G, 2gib, 1.5T; G = GiB = 2^30 bytes)";

namespace {

// "0.5", "1.0", "0.125": digits, a point, 1 to 9 digits, at most 1.
bool parse_fraction(const std::string& text, HeldLevel* out) {
  const std::size_t point = text.find('.');
  if (point == std::string::npos || point == 0 || point + 1 == text.size() ||
      text.size() - point - 1 > 9) {
    return false;
  }
  const std::string whole = text.substr(0, point), decimals = text.substr(point + 1);
  const auto digits = [](const std::string& s) {
    return s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(whole) || !digits(decimals) || whole.size() > 9) return false;
  std::uint64_t den = 1, num = std::stoull(whole);
  for (const char c : decimals) {
    den *= 10;
    num = num * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (num > den) return false;  // more than the peak
  out->of_peak = true;
  out->num = num;
  out->den = den;
  out->bytes = 0;
  out->given = text;
  return true;
}

// a / b rounded to 6 decimals, as the report rounds its ratios (Python's round(a / b, 6)).
double ratio6(std::uint64_t a, std::uint64_t b) {
  const double r =
      a < (std::uint64_t{1} << 53) && b < (std::uint64_t{1} << 53)
          ? static_cast<double>(a) / static_cast<double>(b)
          : static_cast<double>(static_cast<long double>(a) / static_cast<long double>(b));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6f", r);
  return std::strtod(buf, nullptr);
}

// The mean of an area over span ns (span > 0), rounded to the nearest byte (a half up).
Figure mean_of(Figure area, std::uint64_t span) {
  const Figure s = static_cast<Figure>(span);
  Figure q = area / s, r = area % s;
  if (r < 0) {  // floor, as Python's divmod
    q -= 1;
    r += s;
  }
  return 2 * r >= s ? q + 1 : q;
}

}  // namespace

bool parse_level(const std::string& text, HeldLevel* out) {
  if (parse_fraction(text, out)) return true;
  std::uint64_t bytes = 0;
  if (!replay::parse_bytes(text, bytes)) return false;
  out->of_peak = false;
  out->num = out->den = 0;
  out->bytes = bytes;
  out->given = text;
  return true;
}

Figure level_bytes(const HeldLevel& level, Figure peak) {
  if (!level.of_peak) return static_cast<Figure>(level.bytes);
  const Figure num = static_cast<Figure>(level.num), den = static_cast<Figure>(level.den);
  if (peak <= 0) return 0;
  return peak / den * num + peak % den * num / den;  // floor(peak * num / den), within 128 bits
}

HeldPart held_part(const HeldDevice& d, const HeldLevel& level,
                   const std::optional<Figure>& peak_reserved, bool allocated,
                   const std::optional<std::uint64_t>& span) {
  HeldPart p;
  const bool spans = span && *span > 0;
  if (allocated) {
    HeldAllocated a;
    a.overflowed = d.allocated.overflowed();
    if (spans && !a.overflowed) a.mean = mean_of(d.allocated.area(), *span);
    p.allocated = a;
  }
  if (peak_reserved) {
    HeldReserved r;
    r.level = level_bytes(level, *peak_reserved);
    r.overflowed = d.reserved.overflowed();
    if (spans) {
      if (!r.overflowed) r.mean = mean_of(d.reserved.area(), *span);
      const HeldTimes::Above above = d.reserved_times.above(r.level);
      r.above_ns = above.ns;
      r.unsure_ns = above.unsure_ns;
      r.share = ratio6(above.ns, *span);
    }
    p.reserved = r;
  }
  return p;
}

namespace {

// The part's two keys, "allocated" and "reserved", in an object already begun.
void held_keys(JsonOut& out, const HeldPart& p) {
  out.key("allocated");
  if (p.allocated) {
    out.begin_object().key("mean");
    p.allocated->mean ? out.num(*p.allocated->mean) : out.null();
    out.end_object();
  } else {
    out.null();
  }
  out.key("reserved");
  if (const auto& r = p.reserved) {
    out.begin_object().key("mean");
    r->mean ? out.num(*r->mean) : out.null();
    out.key("level").num(r->level).key("above_ns").opt(r->above_ns).key("above_s");
    out.opt_real(r->above_ns ? std::optional<double>(seconds_between(*r->above_ns, 0))
                             : std::nullopt);
    out.key("share").opt_real(r->share).key("unsure_ns").num(r->unsure_ns).end_object();
  } else {
    out.null();
  }
}

}  // namespace

void write_held_part(JsonOut& out, const HeldPart& p) {
  out.begin_object();
  held_keys(out, p);
  out.end_object();
}

void write_held_log(JsonOut& out, const HeldLog& h) {
  out.begin_object().key("from_t_ns").opt(h.from_t_ns).key("to_t_ns").opt(h.to_t_ns);
  out.key("span_s");
  out.opt_real(h.from_t_ns ? std::optional<double>(seconds_between(*h.to_t_ns, *h.from_t_ns))
                           : std::nullopt);
  out.key("level").begin_object().key("given").str(h.level.given).key("of_peak");
  h.level.of_peak ? out.real(std::strtod(h.level.given.c_str(), nullptr)) : out.null();
  out.key("bytes");
  h.level.of_peak ? out.null() : out.num(h.level.bytes);
  out.end_object().key("peak_reserved");
  if (h.peak_reserved) {
    out.begin_object().key("bytes").num(h.peak_reserved->bytes);
    out.key("seq").num(h.peak_reserved->seq).key("t_ns").num(h.peak_reserved->t_ns);
    out.key("time_s").real(seconds_between(h.peak_reserved->t_ns, *h.from_t_ns)).end_object();
  } else {
    out.null();
  }
  held_keys(out, h.all);
  out.end_object();
}

}  // namespace cudapool::analyze
