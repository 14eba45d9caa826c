#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/pgo_workload.sh BUILD: the work that trains the profile of a profile-guided build
# (scripts/cudapool build; CMakeLists.txt, CUDAPOOL_PGO_GENERATE): BUILD's instrumented tune,
# replay and analyze read generated logs of two shapes (a training loop shaped like the shim's
# logs, with fences, and the hard random log of make_random_log.py) and the bundled example, as
# users run them. Not a benchmark and not a test: what it prints is thrown away.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$build/bench/make_training_log" --events 1000000 "$work/train.jsonl" 2>/dev/null
python3 "$root/bench/make_random_log.py" 200000 "$work/random.jsonl"
example="$root/examples/logs/training-loop.jsonl"
# The tune settings of the benchmarks (about 40 of them).
source "$root/bench/tune_tries.bash"
"$build/tools/cudapool-tune" --quiet "${tune_tries[@]}" "$work/train.jsonl" >/dev/null
"$build/tools/cudapool-tune" --quiet "$work/random.jsonl" "$example" >/dev/null
for log in "$work/train.jsonl" "$work/random.jsonl" "$example"; do
  "$build/tools/cudapool-replay" --quiet "$log" >/dev/null
  "$build/tools/cudapool-analyze" --quiet "$log" >/dev/null
done
"$build/tools/cudapool-analyze" --quiet --no-page --perfetto 2000,2000 "$work/train.jsonl" >/dev/null
"$build/tools/cudapool-analyze" --quiet --no-page --memory-viz 100000 "$work/train.jsonl" >/dev/null
