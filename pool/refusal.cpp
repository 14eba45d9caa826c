// SPDX-License-Identifier: Apache-2.0
// pool/refusal.cpp: see refusal.h.
#include "pool/refusal.h"

#include <cstdio>

#include "pool/bytes_text.h"

namespace cudapool::pool {

std::string explain_refusal(const DeviceRefusal& r, int device, std::string_view error_name) {
  std::string what;
  switch (r.step) {
    case RefusalStep::kSegment:
      what = "a new segment of " + bytes_text(r.bytes);
      break;
    case RefusalStep::kAddressRange:
      what = "an expandable segment's address range of " + bytes_text(r.bytes);
      break;
    case RefusalStep::kPages:
      what = bytes_text(r.bytes) + " of an expandable segment's pages";
      break;
  }
  if (r.page_size != 0) {
    what += " (pages of " + bytes_text(r.page_size);
    if (r.large_segment_page) {
      what += ": large_segment_size_mb:" + std::to_string(r.page_size >> 20);
    }
    what += ")";
  }
  std::string error = std::to_string(r.error);
  if (!error_name.empty()) error += " (" + std::string(error_name) + ")";
  char line[512];
  std::snprintf(line, sizeof line,
                "cudapool: allocation failed on device %d: the driver refused %s, for a block of "
                "%s, with error %s; the program's request of %s gets that error\n",
                device, what.c_str(), bytes_text(r.rounded).c_str(), error.c_str(),
                bytes_text(r.requested).c_str());
  return line;
}

}  // namespace cudapool::pool
