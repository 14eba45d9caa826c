// SPDX-License-Identifier: Apache-2.0
// shim/driver/export.h: how a hook is exported. Everything else in the shim is hidden.
#pragma once

#define CUDAPOOL_EXPORT extern "C" __attribute__((visibility("default")))
