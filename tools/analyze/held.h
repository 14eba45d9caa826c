// SPDX-License-Identifier: Apache-2.0
// tools/analyze/held.h: memory held over time, followed during the engine's one pass (issue 31):
// per device, and for all devices together, the allocated and reserved bytes as figures that stay
// constant from the event that sets them to the next change, their areas (bytes x ns: the
// time-weighted means) and, for reserved bytes, how long each figure was held (the time above a
// level, which is chosen only at the end: the default level is a fraction of a peak not yet known
// while the log is read). Times are the log's clock (t_ns), from its first event to its last; the
// clock never runs back here: an event stamped before one ahead of it counts at that one's time.
// Memory: at most kHeldBins bins per series whatever the log's length (past that, neighbouring
// figures share a bin, and held_report.h says when that leaves part of the time above a level
// unsure); per event, two comparisons unless a figure changed. Not here: the counters
// (accounting.h), the level and the figures reported (held_report.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "tools/analyze/figure.h"

namespace cudapool::analyze {

inline constexpr std::size_t kHeldBins = 8192;

// The level of reserved bytes whose time above is reported (cudapool report --level): a fraction
// num / den of the peak (by default half), or a number of bytes; given: as written
// (parse_level(), held_report.h).
struct HeldLevel {
  bool of_peak = true;
  std::uint64_t num = 5, den = 10, bytes = 0;
  std::string given = "0.5";
};

// How long a series held each figure: one bin per figure while there are at most kHeldBins,
// then each bin holds the figures of a range of 2^shift bytes (the lowest and highest of them
// kept, so that a level between them is known to split that bin's time).
class HeldTimes {
 public:
  void add(Figure value, std::uint64_t ns);
  // The time above level: surely (every figure of the bin above it), and unsure (the one bin
  // whose figures lie on both sides of it; 0 while every figure has a bin of its own).
  struct Above {
    std::uint64_t ns = 0, unsure_ns = 0;
  };
  Above above(Figure level) const;
  std::size_t bins() const { return bins_.size(); }
  int shift() const { return shift_; }

 private:
  struct Bin {
    std::uint64_t ns = 0;
    Figure lo = 0, hi = 0;
  };
  void coarsen();
  std::map<Figure, Bin> bins_;  // by value >> shift_
  int shift_ = 0;
};

// A figure over time from a start (the log's first event): its value now and its area, bytes x
// ns, exact (overflowed: the area went past what 128 bits hold, a log whose figures are
// impossible; it stops there).
class HeldSeries {
 public:
  void start(std::uint64_t t) { since_ = t; }
  Figure value() const { return value_; }
  Figure area() const { return area_; }
  bool overflowed() const { return overflow_; }
  // The figure is v from t on (t at or after every earlier t); times, when given, is told how
  // long the figure before it held.
  void set(std::uint64_t t, Figure v, HeldTimes* times) {
    close(t, times);
    value_ = v;
  }
  // The log's end: the last figure holds until end.
  void finish(std::uint64_t end, HeldTimes* times) { close(end, times); }

 private:
  void close(std::uint64_t t, HeldTimes* times);
  Figure value_ = 0, area_ = 0;
  std::uint64_t since_ = 0;
  bool overflow_ = false;
};

struct HeldDevice {
  HeldSeries allocated, reserved;
  HeldTimes reserved_times;
  void start(std::uint64_t t) {
    allocated.start(t);
    reserved.start(t);
  }
  void finish(std::uint64_t end) {
    allocated.finish(end, nullptr);
    reserved.finish(end, &reserved_times);
  }
};

// All devices together: the sums, and the peak of the summed reserved bytes (first reached).
struct HeldRun {
  HeldDevice sum;
  Figure peak = 0;
  std::uint64_t peak_seq = 0, peak_t_ns = 0;
  bool peaked = false;

  // After an event of the device whose held figures are d, its counters now allocated and
  // reserved; t: the log's clock (never back), seq and t_ns: the event's own.
  void follow(HeldDevice& d, Figure allocated, Figure reserved, std::uint64_t t, std::uint64_t seq,
              std::uint64_t t_ns) {
    if (allocated != d.allocated.value()) {
      sum.allocated.set(t, sum.allocated.value() + (allocated - d.allocated.value()), nullptr);
      d.allocated.set(t, allocated, nullptr);
    }
    if (reserved != d.reserved.value()) {
      const Figure s = sum.reserved.value() + (reserved - d.reserved.value());
      sum.reserved.set(t, s, &sum.reserved_times);
      d.reserved.set(t, reserved, &d.reserved_times);
      if (s > peak) {
        peak = s;
        peak_seq = seq;
        peak_t_ns = t_ns;
        peaked = true;
      }
    }
  }
};

}  // namespace cudapool::analyze
