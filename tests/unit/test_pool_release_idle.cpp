// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_release_idle.cpp: DevicePool::release_idle_segments, the empty_cache a
// request from outside the program makes (the shim's control endpoint): it settles the reuse
// fences that passed without waiting for any, gives back every idle segment, keeps a block still
// behind a fence and its segment, and emits empty_cache after the segment_free events.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using namespace pooltest;
using Names = std::vector<std::string>;

TEST_CASE("pool: release_idle_segments gives back idle segments and never waits for a fence") {
  EventLog log;
  Harness h(kGiB, Options{}, &log);
  const std::uintptr_t big = h.alloc(30 * kMiB);  // a segment of its own
  const std::uintptr_t fenced = h.alloc(40 * kMiB);
  const std::uintptr_t kept = h.alloc(512);  // a small segment, still in use
  const std::uint64_t passes = h.backend.fence_next_free();
  h.free(big);  // its fence passes: settled at the release
  const std::uint64_t holds = h.backend.fence_next_free();
  h.free(fenced);  // its fence has not passed
  h.backend.pass_fence(passes);
  CHECK(h.pool.pending_fences() == 2);
  log.events.clear();

  h.pool.release_idle_segments();
  h.check();
  CHECK(h.backend.fences_waited() == 0);
  CHECK(h.stats().num_sync_all_streams == 0);
  CHECK(h.pool.pending_fences() == 1);  // the held one stays
  CHECK(h.pool.reserved_bytes() == 40 * kMiB + 2 * kMiB);
  CHECK(log.names() == Names{"free_completed", "segment_free", "empty_cache"});

  h.backend.pass_fence(holds);
  h.pool.release_idle_segments();
  h.check();
  CHECK(h.pool.pending_fences() == 0);
  CHECK(h.pool.reserved_bytes() == 2 * kMiB);  // the small segment holds a block in use
  h.free(kept);
  h.pool.release_idle_segments();
  CHECK(h.pool.reserved_bytes() == 0);
  CHECK(h.stats().num_device_free == 3);
}
