// SPDX-License-Identifier: Apache-2.0
// tools/analyze/device_gate.cpp: see device_gate.h.
#include "tools/analyze/device_gate.h"

namespace cudapool::analyze {

namespace {
constexpr std::size_t kListedShown = 8;  // device ids named in a note
}

void DeviceGate::list_header(const std::vector<int>& ids) {
  listed_ = std::set<int>(ids.begin(), ids.end());
  has_list_ = !listed_.empty();
}

bool DeviceGate::may_take(int dev) const {
  if (dev >= 0 && static_cast<std::size_t>(dev) < kDeviceIds && admitted_[static_cast<std::size_t>(dev)])
    return true;
  return (!has_list_ || listed_.count(dev) != 0) && admitted_count_ < kMaxDevices;
}

bool DeviceGate::admit_slow(int dev, std::uint64_t line) {
  if (may_take(dev)) {
    admitted_[static_cast<std::size_t>(dev)] = true;
    ++admitted_count_;
    return true;
  }
  Skips& s = has_list_ && listed_.count(dev) == 0 ? unlisted_ : over_;
  ++s.events;
  s.devices.insert(dev);
  if (s.first_line == 0) s.first_line = line;
  return false;
}

bool DeviceGate::skipped(int dev) const {
  return unlisted_.devices.count(dev) != 0 || over_.devices.count(dev) != 0;
}

std::vector<std::string> DeviceGate::notes() const {
  std::vector<std::string> out;
  if (unlisted_.events != 0) {
    std::string names;
    std::size_t shown = 0;
    for (const int id : listed_) {
      if (shown == kListedShown) {
        names += ", ...";
        break;
      }
      names += (shown++ ? ", " : "") + std::to_string(id);
    }
    out.push_back("an event of a device the header does not list (its devices: " + names +
                  "), first at line " + std::to_string(unlisted_.first_line) +
                  ": skipped, as are all such events: " + std::to_string(unlisted_.events) +
                  " events of " + std::to_string(unlisted_.devices.size()) + " devices");
  }
  if (over_.events != 0) {
    const std::string limit = std::to_string(kMaxDevices);
    out.push_back("an event of a device beyond the first " + limit +
                  " devices (the replay keeps at most " + limit +
                  " pools, as the shim does), first at line " + std::to_string(over_.first_line) +
                  ": skipped, as are all such events: " + std::to_string(over_.events) +
                  " events of " + std::to_string(over_.devices.size()) + " devices");
  }
  return out;
}

}  // namespace cudapool::analyze
