# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/cupy.sh: the GPU suite's section cupy: cupy_check.py (CuPy with its pools off)
# under the shim and without it. Sourced by tests/gpu/run.sh (which sets the variables and runs
# test_cupy when GPU_TESTS_ONLY names cupy, or by default); not a script to run alone, and not where
# shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_cupy() { py_check cupy_check cupy 180 "CuPy pools off" cupy_check.py; }
