// log/record.cpp: the action names of record.h, as the log writes them (PyTorch's memory-snapshot
// names for the pool's actions, snake_case for the shim's own). Nothing else.
#include "log/record.h"

namespace cudapool::log {

const char* action_name(LogAction action) {
  switch (action) {
    case LogAction::kAlloc:
      return "alloc";
    case LogAction::kFreeRequested:
      return "free_requested";
    case LogAction::kFreeCompleted:
      return "free_completed";
    case LogAction::kSegmentAlloc:
      return "segment_alloc";
    case LogAction::kSegmentFree:
      return "segment_free";
    case LogAction::kSegmentMap:
      return "segment_map";
    case LogAction::kSegmentUnmap:
      return "segment_unmap";
    case LogAction::kOom:
      return "oom";
    case LogAction::kEmptyCache:
      return "empty_cache";
    case LogAction::kAllocAsync:
      return "alloc_async";
    case LogAction::kFreeAsync:
      return "free_async";
    case LogAction::kAllocManaged:
      return "alloc_managed";
    case LogAction::kAllocPitch:
      return "alloc_pitch";
    case LogAction::kFreeUnowned:
      return "free_unowned";
    case LogAction::kBadFree:
      return "bad_free";
    case LogAction::kIpcRefused:
      return "ipc_refused";
    case LogAction::kContextDropped:
      return "context_dropped";
  }
  return "unknown";
}

}  // namespace cudapool::log
