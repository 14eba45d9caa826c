// SPDX-License-Identifier: Apache-2.0
// pool/constants.h: the fixed sizes of PyTorch's caching-allocator policy (2.11), in bytes.
// Tunable sizes live in config::Options; these never change.
#pragma once

#include <cstddef>

namespace cudapool::pool {

inline constexpr std::size_t kMinBlockSize = 512;        // every request rounds up to this
inline constexpr std::size_t kSmallSize = 1048576;       // requests up to 1 MiB use the small pool
inline constexpr std::size_t kSmallBuffer = 2097152;     // small-pool segments are 2 MiB
inline constexpr std::size_t kMinLargeAlloc = 10485760;  // requests under 10 MiB share big segments
inline constexpr std::size_t kRoundLarge = 2097152;      // larger segments round up to 2 MiB

}  // namespace cudapool::pool
