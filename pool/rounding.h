// SPDX-License-Identifier: Apache-2.0
// pool/rounding.h: request rounding and segment sizing, as PyTorch's round_size() and
// get_allocation_size(), and the large pool's handles under expandable segments. Pure functions of
// the size and the options; no state.
#pragma once

#include <cstddef>

#include "config/options.h"

namespace cudapool::pool {

// The roundup_power2_divisions entry that applies to `size` (intervals of powers of two from 1
// MiB).
std::size_t divisions_for(std::size_t size, const config::Options& options);

// Rounds `size` up to the next of `divisions` equal steps between two powers of two.
std::size_t round_to_power2_division(std::size_t size, std::size_t divisions);

// The block size a request of `size` bytes is served with.
std::size_t round_size(std::size_t size, const config::Options& options);

// The size of a new segment made for a block of `rounded` bytes.
std::size_t segment_size_for(std::size_t rounded, const config::Options& options);

// Under expandable segments, the pages of the large pool (large_segment_size) in one driver
// allocation: expandable_handle_mb's whole pages, at least one.
std::size_t large_handle_pages(const config::Options& options);

}  // namespace cudapool::pool
