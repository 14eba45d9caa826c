// SPDX-License-Identifier: Apache-2.0
// pool/events.cpp: event names (see events.h), from pool/actions.def.
#include "pool/events.h"

namespace cudapool::pool {

std::string_view action_name(Action action) {
  switch (action) {
#define CUDAPOOL_POOL_ACTION(id, name, meaning) \
  case Action::id:                              \
    return name;
#include "pool/actions.def"
#undef CUDAPOOL_POOL_ACTION
  }
  return "unknown";
}

}  // namespace cudapool::pool
