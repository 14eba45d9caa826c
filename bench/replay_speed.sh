#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/replay_speed.sh: replay throughput (events per second) of cudapool-replay on this machine,
# for a realistic log (the bundled training loop, repeated to 2 M events) and a hard random one.
# A benchmark, never a test: run it by hand and copy the table into docs/benchmarks.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
replay=$("$root/scripts/cudapool" build >/dev/null && echo "${CUDAPOOL_BUILD_DIR:-$root/build}/tools/cudapool-replay")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The training loop has balanced allocs and frees: concatenating its event lines 126 times replays
# the loop 126 times in one process (2 M events).
src="$root/examples/logs/training-loop.jsonl"
head -n 1 "$src" >"$work/training.jsonl"
for _ in $(seq 126); do tail -n +2 "$src"; done >>"$work/training.jsonl"
python3 "$root/bench/make_random_log.py" 2000000 "$work/random.jsonl"

printf '| log | events | seconds (best of 3) | events/s |\n| --- | --- | --- | --- |\n'
for name in training random; do
  best=""
  for _ in 1 2 3; do
    out=$("$replay" --json "$work/$name.jsonl")
    s=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
    n=$(printf '%s' "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["counts"]["events_replayed"])')
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $s < $best else 1)"; then best=$s; fi
  done
  python3 -c "print('| $name | $n | %.3f | %.2f M |' % ($best, $n / $best / 1e6))"
done
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F)"
