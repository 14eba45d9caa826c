// pool/summary.h: the statistics of one device as a text table laid out like PyTorch's
// torch.cuda.memory_summary(), so that users of both read it the same way. Formatting only.
#pragma once

#include <string>

#include "pool/stats.h"

namespace cudapool::pool {

std::string memory_summary(const DeviceStats& stats, int device, bool abbreviated = false);

}  // namespace cudapool::pool
