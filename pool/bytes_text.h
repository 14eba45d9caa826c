// SPDX-License-Identifier: Apache-2.0
// pool/bytes_text.h: a byte count for people: "1.50 GiB", "20.00 MiB", "512 bytes" (binary units,
// two decimals). Header-only; the out-of-memory explanation and cudapool tune print sizes this way.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace cudapool::pool {

inline std::string bytes_text(std::uint64_t b) {
  char buf[32];
  const double v = static_cast<double>(b);
  if (b >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", v / (1ull << 30));
  } else if (b >= (1ull << 20)) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", v / (1ull << 20));
  } else {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  }
  return buf;
}

}  // namespace cudapool::pool
