#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/tune_speed.sh: how long cudapool tune takes for a 1-million-event log under 40 settings
# on this machine (issue 15's target: under 10 s on the 2-core development machine), for the
# bundled training loop repeated to 1 M events and for the hard random log of make_random_log.py.
# A benchmark, never a test: run it by hand and copy the table into docs/benchmarks.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/cudapool" build >/dev/null
tune="${CUDAPOOL_BUILD_DIR:-$root/build}/tools/cudapool-tune"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

src="$root/examples/logs/training-loop.jsonl"
head -n 1 "$src" >"$work/training.jsonl"
for _ in $(seq 64); do tail -n +2 "$src"; done >>"$work/training.jsonl"
python3 "$root/bench/make_random_log.py" 1000000 "$work/random.jsonl"

# The sweep of these logs gives 16-17 settings; the --try strings of tune_tries.bash bring every
# run to 40 or more.
source "$root/bench/tune_tries.bash"
tries=("${tune_tries[@]}")

printf '| log | events | settings | seconds (best of 3) | replayed events/s |\n| --- | --- | --- | --- | --- |\n'
for name in training random; do
  best="" settings="" events=""
  for _ in 1 2 3; do
    out=$("$tune" --json "${tries[@]}" "$work/$name.jsonl")
    read -r s n e < <(printf '%s' "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
n = len(d["logs"][0]["results"])
print(d["seconds"], n, d["logs"][0]["events"])')
    settings=$n events=$e
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $s < $best else 1)"; then best=$s; fi
  done
  python3 -c "print('| $name | $events | $settings | %.2f | %.2f M |' % ($best, $events * $settings / $best / 1e6))"
done
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F)"
