# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/numba.sh: the GPU suite's section numba: numba_check.py (Numba device arrays)
# under the shim and without it. Sourced by tests/gpu/run.sh (which sets the variables and runs
# test_numba when GPU_TESTS_ONLY names numba, or by default); not a script to run alone, and not
# where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

# Numba finds the driver on its own (not through cudart) and allocates with cuMemAlloc.
test_numba() { py_check numba_check numba 240 "Numba device arrays" numba_check.py; }
