# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/jax.sh: the GPU suite's section jax: jax_check.py (XLA's platform allocator)
# under the shim and without it. Sourced by tests/gpu/run.sh (which sets the variables and runs
# test_jax when GPU_TESTS_ONLY names jax, or by default); not a script to run alone, and not where
# shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_jax() {
  py_check jax_check jax 240 "XLA platform allocator" jax_check.py \
    XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false
}
