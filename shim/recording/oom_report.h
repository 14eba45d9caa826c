// shim/recording/oom_report.h: the explanation the shim prints on stderr when it answers
// CUDA_ERROR_OUT_OF_MEMORY for a pooled allocation (pool/oom.h says what it contains). Printed
// once per distinct situation (the cause and the request's power-of-two size class, per device),
// so a program that retries in a loop does not flood its output; at most 64 situations. Called
// from the allocation hook after the pool's lock is released; never from a signal handler.
#pragma once

#include "pool/oom.h"

namespace cudapool::shim {

void report_oom(const pool::OomState& state, int device);

}  // namespace cudapool::shim
