// pool/events.cpp: event names (see events.h), as PyTorch's memory snapshot writes them.
#include "pool/events.h"

namespace cudapool::pool {

std::string_view action_name(Action action) {
  switch (action) {
    case Action::kAlloc:
      return "alloc";
    case Action::kFreeRequested:
      return "free_requested";
    case Action::kFreeCompleted:
      return "free_completed";
    case Action::kSegmentAlloc:
      return "segment_alloc";
    case Action::kSegmentFree:
      return "segment_free";
    case Action::kSegmentMap:
      return "segment_map";
    case Action::kSegmentUnmap:
      return "segment_unmap";
    case Action::kOom:
      return "oom";
    case Action::kEmptyCache:
      return "empty_cache";
    case Action::kSegmentRefused:
      return "segment_refused";
  }
  return "unknown";
}

}  // namespace cudapool::pool
