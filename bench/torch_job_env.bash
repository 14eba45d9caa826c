# SPDX-License-Identifier: Apache-2.0
# bench/torch_job_env.bash: what the scripts that run real PyTorch jobs under the shim share
# (sourced by bench/real_logs.sh and bench/verdict_logs.sh, not run): REPO, SHIM
# ($CUDAPOOL_LIB, default build/shim/libcudapool.so), PY ($PYTHON, default python3), STEPS
# (default 8), and $OUT, which must be set.
set -uo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHIM="${CUDAPOOL_LIB:-$REPO/build/shim/libcudapool.so}"
PY="${PYTHON:-python3}"
STEPS="${STEPS:-8}"
: "${OUT:?set OUT}"
