// SPDX-License-Identifier: Apache-2.0
// log/record.cpp: the action names of record.h, as the log writes them (pool/actions.def and
// log/shim_actions.def), and a pool event as a record. Nothing else.
#include "log/record.h"

#include <array>

namespace cudapool::log {

const char* action_name(LogAction action) {
  switch (action) {
#define CUDAPOOL_POOL_ACTION(id, name, meaning) \
  case LogAction::id:                           \
    return name;
#define CUDAPOOL_SHIM_ACTION CUDAPOOL_POOL_ACTION
#include "log/shim_actions.def"
#include "pool/actions.def"
#undef CUDAPOOL_SHIM_ACTION
#undef CUDAPOOL_POOL_ACTION
    case LogAction::kCount:
      break;
  }
  return "unknown";
}

bool action_from_name(std::string_view name, LogAction* action) {
  // The names with their lengths, measured once (the readers look up an action per line).
  static const auto names = [] {
    std::array<std::string_view, static_cast<std::size_t>(LogAction::kCount)> out{};
    for (std::size_t a = 0; a < out.size(); ++a) out[a] = action_name(static_cast<LogAction>(a));
    return out;
  }();
  for (std::size_t a = 0; a < names.size(); ++a) {
    if (name == names[a]) {
      *action = static_cast<LogAction>(a);
      return true;
    }
  }
  return false;
}

namespace {

// The pool's actions are the first of LogAction, value for value.
#define CUDAPOOL_POOL_ACTION(id, name, meaning)                                        \
  static_assert(static_cast<int>(pool::Action::id) == static_cast<int>(LogAction::id), \
                "pool/actions.def order");
#include "pool/actions.def"
#undef CUDAPOOL_POOL_ACTION

LogAction to_log_action(pool::Action action) {
  return static_cast<LogAction>(static_cast<int>(action));
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
