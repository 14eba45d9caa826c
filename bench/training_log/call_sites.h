// SPDX-License-Identifier: Apache-2.0
// bench/training_log/call_sites.h: where the generated program allocates (a Site per kind of
// tensor), and the native backtrace each site has: return addresses inside a fixed set of loaded
// objects laid out like a PyTorch process (libcudart, libc10_cuda, libtorch_cuda, libtorch_cpu,
// libtorch_python, python3), innermost first, the same for every call of a site (as the shim's
// backtraces are: Python's frames are not native ones). Also the modules list and the symbol text
// of the summary line's leaks (log/format.h Module, Leak::symbols), as the shim writes them when
// dladdr finds no symbol. Not here: which tensors the program makes (workload.h).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "log/format.h"

namespace cudapool::bench {

enum class Site : std::uint8_t {
  kWeight,
  kOptimizerState,
  kCublasWorkspace,
  kCublasHandle,
  kInputCopy,
  kEmbedding,
  kLayerNorm,
  kLayerNormStats,
  kLinear,
  kAttention,
  kAttentionStats,
  kRngState,
  kDropoutMask,
  kResidualAdd,
  kGelu,
  kLogits,
  kLossUpcast,
  kLossScalar,
  kLinearGradInput,
  kLinearGradWeight,
  kLinearGradBias,
  kLayerNormGrad,
  kLayerNormGradParams,
  kGeluGrad,
  kAttentionGrad,
  kAttentionGradAccum,
  kReductionWorkspace,
  kEmbeddingGrad,
  kIndexSort,
  kGradNorm,
  kClipScalar,
  kAdamTemp,
  kCount
};
inline constexpr std::size_t kSites = static_cast<std::size_t>(Site::kCount);

class CallSites {
 public:
  CallSites();
  // The site's return addresses, innermost first (log::kMaxBacktrace of them).
  const std::uint64_t* frames(Site site) const {
    return frames_[static_cast<std::size_t>(site)].data();
  }
  // The loaded objects, sorted by address (the summary line's "modules").
  const std::vector<log::Module>& modules() const { return modules_; }
  // "0x... PATH(?+0xOFFSET)", as the shim names a return address without a symbol; "0x..." when
  // no module holds it.
  std::string symbol(std::uint64_t address) const;

 private:
  std::vector<log::Module> modules_;
  std::array<std::array<std::uint64_t, log::kMaxBacktrace>, kSites> frames_{};
};

}  // namespace cudapool::bench
