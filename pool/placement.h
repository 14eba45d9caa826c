// pool/placement.h: where the simulated device puts a new segment, modelled on what the CUDA
// driver was seen to do (segment traces of PyTorch 2.11 on an H200, docs/parity.md): segments of
// 2 MiB come from one region, upward, lowest free range first; larger segments from another,
// top-down, highest free range first, each taking a slot rounded up to a coarse granularity;
// released ranges are reused. It matters because PyTorch's best fit breaks ties between
// equal-size free blocks by address. Not here: capacity (simulated_backend.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace cudapool::pool {

class DriverPlacement {
 public:
  // Regions start at base: 2 MiB segments upward from base, larger ones downward from
  // base + span.
  DriverPlacement(std::uintptr_t base, std::uintptr_t span);

  std::uintptr_t place(std::size_t bytes);
  void release(std::uintptr_t ptr, std::size_t bytes);

  // The slot a segment of `bytes` takes in the large region.
  static std::size_t slot_size(std::size_t bytes);

 private:
  struct Region {
    std::map<std::uintptr_t, std::size_t> free;  // released ranges, merged
  };
  std::uintptr_t take_from(Region& r, std::size_t slot, bool highest);
  void give_back(Region& r, std::uintptr_t ptr, std::size_t slot);

  Region small_, large_;
  std::uintptr_t small_next_;  // next untouched address of the small region (grows up)
  std::uintptr_t large_next_;  // lowest address used so far of the large region (grows down)
};

}  // namespace cudapool::pool
