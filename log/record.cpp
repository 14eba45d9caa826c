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
    case LogAction::kVmmCreate:
      return "vmm_create";
    case LogAction::kVmmRelease:
      return "vmm_release";
    case LogAction::kVmmMap:
      return "vmm_map";
    case LogAction::kVmmUnmap:
      return "vmm_unmap";
    case LogAction::kAllocHost:
      return "alloc_host";
    case LogAction::kFreeHost:
      return "free_host";
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
    case LogAction::kStreamCreated:
      return "stream_created";
    case LogAction::kStreamFirstWork:
      return "stream_first_work";
    case LogAction::kSegmentRefused:
      return "segment_refused";
  }
  return "unknown";
}

namespace {

LogAction to_log_action(pool::Action action) {
  switch (action) {
    case pool::Action::kAlloc:
      return LogAction::kAlloc;
    case pool::Action::kFreeRequested:
      return LogAction::kFreeRequested;
    case pool::Action::kFreeCompleted:
      return LogAction::kFreeCompleted;
    case pool::Action::kSegmentAlloc:
      return LogAction::kSegmentAlloc;
    case pool::Action::kSegmentFree:
      return LogAction::kSegmentFree;
    case pool::Action::kSegmentMap:
      return LogAction::kSegmentMap;
    case pool::Action::kSegmentUnmap:
      return LogAction::kSegmentUnmap;
    case pool::Action::kOom:
      return LogAction::kOom;
    case pool::Action::kEmptyCache:
      return LogAction::kEmptyCache;
    case pool::Action::kSegmentRefused:
      return LogAction::kSegmentRefused;
  }
  return LogAction::kAlloc;
}

}  // namespace

LogRecord record_of(const pool::PoolEvent& event) {
  LogRecord r;
  r.device = event.device;
  r.action = to_log_action(event.action);
  r.ptr = event.ptr;
  r.size = event.size;
  r.block_size = event.block_size;
  r.segment = event.segment;
  r.stream = event.stream;
  r.cache_hit = event.cache_hit;
  if (event.oom != nullptr) {
    const pool::OomState& o = *event.oom;
    r.oom = OomFigures{o.segment_size,
                       o.device_total,
                       o.device_free,
                       o.cap,
                       o.reserved,
                       o.allocated,
                       o.free_blocks,
                       o.largest_free_block,
                       static_cast<std::uint8_t>(static_cast<int>(o.cause) + 1),
                       o.device_free_known};
  }
  return r;
}

}  // namespace cudapool::log
