// SPDX-License-Identifier: Apache-2.0
// tools/analyze/device_layout.h: a device's layout followed through its events, the port of
// layout.py's Layout.apply and segmap.py's Detail.event as operations on a Layout (layout.h),
// with two exact copies kept in the same pass (peak_copy.h): the layout at the device's reserved
// peak (the report's fragmentation, the page's segment map there) and the bytes each allocation
// site holds at the allocated peak (the page's sites at the peak). The contexts' tags are
// layout.py's: any layout event of a context other than 0 tags its address (a segment_map its
// segment), for good, and a context_dropped takes what carries its tag. Not here: the counters
// (accounting.h), the sites' table (sites.h).
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "tools/analyze/figure.h"
#include "tools/analyze/layout.h"
#include "tools/analyze/log_line.h"
#include "tools/analyze/peak_copy.h"

namespace cudapool::analyze {

// Whether an action changes a device's layout and counters (timeline.py's STATE_ACTIONS): the
// events DeviceLayout::event follows.
bool changes_state(int action);

// Blocks allocated (not fenced) and their bytes, per allocation site (index site + 1: 0 holds the
// blocks without a site).
struct SiteHeld {
  struct Op {
    std::uint32_t index;
    std::int64_t count;
    Figure bytes;
  };
  std::vector<std::pair<std::int64_t, Figure>> held;
  void apply(const Op& op);
  std::size_t size() const { return held.size(); }
};

class DeviceLayout {
 public:
  // A layout event of the device (alloc, free_requested, free_completed, segment_*,
  // context_dropped; others are ignored); site: its allocation site (alloc), -1 for none.
  void event(const Event& e, std::int32_t site);
  void reserved_peak() { reserved_.peak(live_); }
  void allocated_peak() { allocated_.peak(held_); }

  const Layout& live() const { return live_; }
  const Layout& at_reserved_peak() const { return reserved_.at_peak(); }
  bool reserved_peak_reached() const { return reserved_.reached(); }
  const SiteHeld& at_allocated_peak() const { return allocated_.at_peak(); }
  bool allocated_peak_reached() const { return allocated_.reached(); }
  std::size_t whole_copies() const { return reserved_.whole_copies() + allocated_.whole_copies(); }

 private:
  void emit(const LayoutOp& op);
  void hold(std::int32_t site, std::int64_t count, Figure bytes);
  int tag(const MapKey& key) const;

  Layout live_;
  PeakCopy<Layout, LayoutOp> reserved_;
  SiteHeld held_;
  PeakCopy<SiteHeld, SiteHeld::Op> allocated_;
  std::map<MapKey, int> tags_;  // addresses (and mapped keys) of other contexts than 0
};

}  // namespace cudapool::analyze
