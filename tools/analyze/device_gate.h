// SPDX-License-Identifier: Apache-2.0
// tools/analyze/device_gate.h: which devices' events the engine takes, by the replay's rule
// (tools/replay/replayer_pools.cpp; tests/oracle/devices.py): when the header lists
// devices, the events of any other device are skipped; of the others, the first kMaxDevices to
// appear are taken and the events of any further one skipped. Each kind of skip is counted and
// said once, in the replay's words. So whatever a log names, the engine's per-device state and
// output stay bounded. Not here: reading lines (log_line.h).
#pragma once

#include <bitset>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace cudapool::analyze {

inline constexpr std::size_t kMaxDevices = 256;  // tools/replay/replayer.h kMaxPools
inline constexpr std::size_t kDeviceIds = 1 << 16;

class DeviceGate {
 public:
  // The header's device ids (its checked entries' ids): the devices it lists; none: no list.
  void list_header(const std::vector<int>& ids);
  // Whether dev is, or could still be, taken (listed, and within the limit).
  bool may_take(int dev) const;
  // Whether an event of dev at line is taken; a skipped one is counted.
  bool admit(int dev, std::uint64_t line) {
    if (admitted_[static_cast<std::size_t>(dev)]) return true;
    return admit_slow(dev, line);
  }
  std::uint64_t skipped_events() const { return unlisted_.events + over_.events; }
  bool skipped(int dev) const;
  // What was skipped, one note per kind (the report's words).
  std::vector<std::string> notes() const;

 private:
  struct Skips {
    std::uint64_t events = 0;
    std::set<int> devices;
    std::uint64_t first_line = 0;
  };
  bool admit_slow(int dev, std::uint64_t line);
  bool has_list_ = false;
  std::set<int> listed_;
  std::bitset<kDeviceIds> admitted_;
  std::size_t admitted_count_ = 0;
  Skips unlisted_, over_;
};

}  // namespace cudapool::analyze
