// pool/oom.cpp: see oom.h.
#include "pool/oom.h"

#include "pool/bytes_text.h"

#include <cstdio>

namespace cudapool::pool {

namespace {

std::string bytes(std::uint64_t b) {
  return bytes_text(b);
}

}  // namespace

std::string_view oom_cause_name(OomCause cause) {
  switch (cause) {
    case OomCause::kFragmentation:
      return "fragmentation";
    case OomCause::kCap:
      return "cap";
    case OomCause::kShortage:
      return "shortage";
  }
  return "shortage";
}

OomCause classify_oom(const OomState& s) {
  if (s.cap != 0 && s.reserved + s.segment_size > s.cap &&
      (!s.device_free_known || s.device_free >= s.segment_size)) {
    return OomCause::kCap;
  }
  const std::uint64_t unallocated = s.reserved > s.allocated ? s.reserved - s.allocated : 0;
  if (s.rounded != 0 && unallocated >= s.rounded) return OomCause::kFragmentation;
  return OomCause::kShortage;
}

std::string explain_oom(const OomState& s, int device) {
  std::string out;
  char line[512];
  const std::uint64_t unallocated = s.reserved > s.allocated ? s.reserved - s.allocated : 0;
  std::snprintf(line, sizeof line,
                "cudapool: out of memory on device %d: tried to allocate %s (a block of %s, from "
                "a new segment of %s)\n",
                device, bytes(s.requested).c_str(), bytes(s.rounded).c_str(),
                bytes(s.segment_size).c_str());
  out += line;
  std::snprintf(
      line, sizeof line, "cudapool:   device: %s total, %s free%s\n", bytes(s.device_total).c_str(),
      s.device_free_known ? bytes(s.device_free).c_str() : "(unknown)",
      s.cap != 0 ? (", cap " + bytes(s.cap) + " (per_process_memory_fraction)").c_str() : "");
  out += line;
  std::snprintf(line, sizeof line,
                "cudapool:   pool: %s reserved, %s allocated, %s reserved but unallocated in %llu "
                "free cached block%s (the largest %s)\n",
                bytes(s.reserved).c_str(), bytes(s.allocated).c_str(), bytes(unallocated).c_str(),
                static_cast<unsigned long long>(s.free_blocks), s.free_blocks == 1 ? "" : "s",
                bytes(s.largest_free_block).c_str());
  out += line;
  switch (s.cause) {
    case OomCause::kCap: {
      const double need = s.device_total != 0 ? static_cast<double>(s.reserved + s.segment_size) /
                                                    static_cast<double>(s.device_total)
                                              : 1.0;
      std::snprintf(line, sizeof line,
                    "cudapool:   why: the memory cap refused it, the device had room. Raise "
                    "per_process_memory_fraction to at least %.2f, or unset it\n",
                    need > 1.0 ? 1.0 : need + 0.005);
      break;
    }
    case OomCause::kFragmentation:
      std::snprintf(line, sizeof line,
                    "cudapool:   why: fragmentation: %s is reserved but unallocated, yet no free "
                    "block holds %s. Try expandable_segments:True (or see what `cudapool tune` "
                    "finds for a log of this run: CUDAPOOL_LOG)\n",
                    bytes(unallocated).c_str(), bytes(s.rounded).c_str());
      break;
    case OomCause::kShortage:
      std::snprintf(line, sizeof line,
                    "cudapool:   why: the program holds %s of the device's %s; no setting of the "
                    "pool frees that: use less memory (smaller batches) or a larger device\n",
                    bytes(s.allocated).c_str(), bytes(s.device_total).c_str());
      break;
  }
  out += line;
  return out;
}

}  // namespace cudapool::pool
