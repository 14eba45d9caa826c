// SPDX-License-Identifier: Apache-2.0
// pool/invariants.h: a full consistency check of a DevicePool (segment chains, cache sets, free
// neighbours merged, statistics equal to what the blocks add up to). O(blocks): for tests and
// debugging, never for the hot path.
#pragma once

#include <string>
#include <vector>

#include "pool/device_pool.h"

namespace cudapool::pool {

// Every broken invariant, in words; empty when the pool is consistent.
std::vector<std::string> check_invariants(const DevicePool& pool);

}  // namespace cudapool::pool
