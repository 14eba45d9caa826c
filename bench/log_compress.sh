#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/log_compress.sh: what a compressed log costs (docs/benchmarks.md, "Compressed logs"), in one
# command for any machine (the GPU machine included: nothing here needs a GPU): builds the benches,
# prints the machine, then build/bench/log_cost plain, .zst and .gz (the producer's cost per logged
# event and the writer's burst rate) and build/bench/log_compress on a real shim log (bytes per
# event on disk and the writer's CPU per event, at the log's own pace and at once). A benchmark,
# never a test: `bench/log_compress.sh [LOG]`, LOG a shim log, plain, .gz or .zst (default: the
# bundled examples/logs/training-loop.jsonl); copy the tables into docs/benchmarks.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${CUDAPOOL_BUILD_DIR:-$root/build}"
log="${1:-$root/examples/logs/training-loop.jsonl}"
"$root/scripts/cudapool" build >/dev/null
cmake --build "$build" --target log_cost log_compress >/dev/null
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case "$log" in
  *.gz) gzip -dc "$log" >"$work/log.jsonl" ;;
  *.zst) zstd -qdc "$log" >"$work/log.jsonl" ;;
  *) cp "$log" "$work/log.jsonl" ;;
esac

echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); host: $(uname -n), $(nproc) cores," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "libzstd: $(ls /usr/lib/*/libzstd.so.1.* 2>/dev/null | head -1); zlib: $(ls /usr/lib/*/libz.so.1.* 2>/dev/null | head -1)"
for ext in "" .zst .gz; do
  echo
  echo "log_cost, the log written as .jsonl$ext:"
  "$build/bench/log_cost" "$work" "$ext"
done
echo
echo "log_compress $log, at the log's own pace:"
"$build/bench/log_compress" "$work/log.jsonl" --dir "$work"
echo
echo "log_compress $log x20, at once, with the codecs' levels and sync intervals:"
"$build/bench/log_compress" "$work/log.jsonl" --rate 0 --repeat 20 --dir "$work" --levels
