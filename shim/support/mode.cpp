// SPDX-License-Identifier: Apache-2.0
// shim/support/mode.cpp: see mode.h.
#include "shim/support/mode.h"

namespace cudapool::shim {

namespace detail {
std::atomic<int> g_mode{static_cast<int>(Mode::kUninitialized)};
}  // namespace detail

}  // namespace cudapool::shim
