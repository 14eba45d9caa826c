// SPDX-License-Identifier: Apache-2.0
// shim/recording/oom_report.h: the explanations the shim prints on stderr when a pooled
// allocation fails: CUDA_ERROR_OUT_OF_MEMORY (pool/oom.h says what it contains), and another
// error the driver gave one of the pool's requests (pool/refusal.h), so that no failure is
// silent. Each printed once per distinct situation (out-of-memory: the cause and the request's
// power-of-two size class; a refusal: the step and the error; per device), so a program that
// retries in a loop does not flood its output; at most 64 situations. Called from the allocation
// hook after the pool's lock is released; never from a signal handler.
#pragma once

#include "pool/oom.h"
#include "pool/refusal.h"

namespace cudapool::shim {

void report_oom(const pool::OomState& state, int device);
void report_refusal(const pool::DeviceRefusal& refusal, int device);

}  // namespace cudapool::shim
