// SPDX-License-Identifier: Apache-2.0
// shim/driver/cuda_api.h: the CUDA driver declarations the shim needs, from the toolkit's
// cuda.h, plus the few entry points cuda.h only declares under macros (per-thread-stream `_ptsz`
// variants and the 4-argument cuGetProcAddress). Types only: the shim links neither libcuda nor
// libcudart.
#pragma once

#include <cuda.h>

#include <type_traits>

// cuda.h maps the name to cuGetProcAddress_v2; the shim means the exported 4-argument symbol.
#undef cuGetProcAddress

extern "C" {
// The legacy 4-argument cuGetProcAddress, still exported by libcuda.so.1.
using cuGetProcAddress_v1_fn = CUresult (*)(const char* symbol, void** pfn, int cudaVersion,
                                            cuuint64_t flags);
using cuGetProcAddress_v2_fn = CUresult (*)(const char* symbol, void** pfn, int cudaVersion,
                                            cuuint64_t flags,
                                            CUdriverProcAddressQueryResult* symbolStatus);
}
