#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/read_speed.sh: what reading a compressed log costs (issue 27): the bundled training loop
# repeated to 2 M events (as bench/replay_speed.sh makes it), plain, gzip (-6) and zstd (-3 and
# -19): its size on disk and per event, cudapool-cat's decoding rate (plain text out, to
# /dev/null), cudapool-replay's events/s on each (its own "seconds": reading and replaying), best
# of 3; and `cudapool report --json` (Python, through cudapool-cat for a compressed log) on a
# quarter of it, plain and zstd, one run each. BASE_REPLAY=PATH (a cudapool-replay built before
# the change) adds the plain log through it, side by side. A benchmark, never a test: run it by
# hand and copy the tables into docs/benchmarks.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CUDAPOOL_BUILD_DIR:-$root/build}"
"$root/scripts/cudapool" build >/dev/null
replay="$build/tools/cudapool-replay" cat="$build/tools/cudapool-cat"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

src="$root/examples/logs/training-loop.jsonl"
head -n 1 "$src" >"$work/training.jsonl"
for _ in $(seq 126); do tail -n +2 "$src"; done >>"$work/training.jsonl"
gzip -6 -c "$work/training.jsonl" >"$work/training.jsonl.gz"
zstd -q -3 -c "$work/training.jsonl" >"$work/training.jsonl.zst"
zstd -q -19 -c "$work/training.jsonl" >"$work/training.jsonl.zst19"
events=$(($(wc -l <"$work/training.jsonl") - 1))

seconds() { python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])'; }
best() {  # best of 3 of the command's "seconds"
  local b="" s
  for _ in 1 2 3; do
    s=$("$@" | seconds)
    if [ -z "$b" ] || python3 -c "import sys; sys.exit(0 if $s < $b else 1)"; then b=$s; fi
  done
  echo "$b"
}
wall() {  # best of 3 wall-clock seconds of the command
  python3 - "$@" <<'PY'
import subprocess, sys, time
best = None
for _ in range(3):
    t = time.perf_counter()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
    t = time.perf_counter() - t
    best = t if best is None or t < best else best
print("%.3f" % best)
PY
}

printf '| log | bytes | bytes/event | cudapool-cat (s, MB/s of text) | cudapool-replay (s) | events/s |\n'
printf '| --- | --- | --- | --- | --- | --- |\n'
plain=$(stat -c %s "$work/training.jsonl")
if [ -n "${BASE_REPLAY:-}" ]; then
  s=$(best "$BASE_REPLAY" --json "$work/training.jsonl")
  python3 -c "print('| plain, before (BASE_REPLAY) | $plain | %.1f | - | %.3f | %.2f M |' % ($plain / $events, $s, $events / $s / 1e6))"
fi
for f in training.jsonl training.jsonl.gz training.jsonl.zst training.jsonl.zst19; do
  size=$(stat -c %s "$work/$f")
  c=$(wall "$cat" --quiet "$work/$f")
  s=$(best "$replay" --json --quiet "$work/$f")
  python3 -c "print('| $f | $size | %.1f | %.3f, %.0f | %.3f | %.2f M |' % ($size / $events, $c, $plain / $c / 1e6, $s, $events / $s / 1e6))"
done
echo
echo "$events events; zstd -19 as training.jsonl.zst19"
echo
# The Python report on a quarter of the log: plain, and zstd through cudapool-cat.
head -n $((events / 4 + 1)) "$work/training.jsonl" >"$work/quarter.jsonl"
zstd -q -3 -c "$work/quarter.jsonl" >"$work/quarter.jsonl.zst"
export PYTHONPATH="$root/scripts" CUDAPOOL_BUILD_DIR="$build"
printf '| report --json on | events | seconds (one run) |\n| --- | --- | --- |\n'
for f in quarter.jsonl quarter.jsonl.zst; do
  t=$(python3 - "$work/$f" <<'PY'
import subprocess, sys, time
t = time.perf_counter()
subprocess.run([sys.executable, "-m", "cudapool_analysis", "report", "--json", "--quiet",
                sys.argv[1]], stdout=subprocess.DEVNULL, check=True)
print("%.2f" % (time.perf_counter() - t))
PY
)
  echo "| $f | $((events / 4)) | $t |"
done
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%F)"
