#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/tools_speed.sh: how long each tool that reads a log takes on a long training-like log, and
# its peak memory: logs of the given sizes made by bench/make_training_log (shaped like the shim's:
# 3 events an allocation, about 2,000 allocations a step), then `cudapool replay`, `report`,
# `report --json`, `report --html`, `export --perfetto`, `export --memory-viz` and `tune` (about 40
# settings: bench/tune_tries.bash) one after the other, each under /usr/bin/time -v (wall time;
# CPU time, user and system, which other work on the machine changes less than the wall time;
# the peak resident memory of its largest process), stopped after --limit seconds and run under an
# address-space limit (--memory-limit) so that a tool that would take all memory fails alone
# instead of the machine. Prints a markdown table with the machine, date, commit and load.
# A benchmark, never a test: run it by hand and copy the table into docs/benchmarks.md.
#
# usage: bench/tools_speed.sh [--events "N ..."] [--compress none|zst|gz] [--requests-only]
#            [--gen "ARGS"] [--tools "NAME ..."] [--limit SECONDS] [--memory-limit GB]
#            [--work DIR] [--keep]
#   --events "N ..."   the logs' sizes in events (default "1000000 4900000")
#   --compress KIND    write the logs compressed (zst: zstd -3, gz: gzip -6) and give the tools
#                      the compressed file (before the tools read compressed logs they refuse it:
#                      the table then says "exit 1")
#   --requests-only    logs of requests only (make_training_log --requests-only)
#   --gen "ARGS"       more arguments for make_training_log (e.g. "--backtrace 8 --vary-shapes")
#   --tools "NAME ..." a subset of: replay report report-json report-html perfetto memory-viz tune
#                      analyze (cudapool-analyze: the engine's one pass, its document to a file)
#   --limit SECONDS    a tool still running then is stopped: "> SECONDS s" (default 600)
#   --memory-limit GB  each tool's address space (ulimit -v; default 8)
#   --work DIR         where the logs and outputs go (default: a new folder in $TMPDIR or /tmp,
#                      removed at the end unless --keep)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
sizes="1000000 4900000" compress=none requests=0 gen_args="" limit=600 memory_gb=8 work="" keep=0
tools="replay report report-json report-html perfetto memory-viz tune"
while [ $# -gt 0 ]; do
  case "$1" in
    --events) sizes=$2; shift 2 ;;
    --compress) compress=$2; shift 2 ;;
    --requests-only) requests=1; shift ;;
    --gen) gen_args=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --memory-limit) memory_gb=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done
case "$compress" in
  none) ext="" ;;
  zst) ext=.zst; command -v zstd >/dev/null || { echo "tools_speed.sh: --compress zst needs zstd (apt-get install -y zstd)" >&2; exit 1; } ;;
  gz) ext=.gz ;;
  *) echo "tools_speed.sh: --compress: none, zst or gz, not '$compress'" >&2; exit 2 ;;
esac
[ -x /usr/bin/time ] || { echo "tools_speed.sh: needs GNU time (apt-get install -y time)" >&2; exit 1; }

"$root/scripts/cudapool" build >/dev/null
build="${CUDAPOOL_BUILD_DIR:-$root/build}"
gen="$build/bench/make_training_log"
if [ -z "$work" ]; then
  work=$(mktemp -d "${TMPDIR:-/tmp}/tools_speed.XXXXXX")
  [ "$keep" = 1 ] || trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
source "$root/bench/tune_tries.bash"

# tool_command NAME LOG: the command line of a tool, in cmd.
tool_command() {
  local c="$root/scripts/cudapool"
  case "$1" in
    replay) cmd=("$c" replay "$2") ;;
    report) cmd=("$c" report "$2") ;;
    report-json) cmd=("$c" report --json "$2") ;;
    report-html) cmd=("$c" report --html "$work/out.html" --force "$2") ;;
    perfetto) cmd=("$c" export --perfetto "$work/out.json" --force "$2") ;;
    memory-viz) cmd=("$c" export --memory-viz "$work/out.pickle" --force "$2") ;;
    tune) cmd=("$c" tune --json "${tune_tries[@]}" "$2") ;;
    analyze) cmd=("${CUDAPOOL_BUILD_DIR:-$root/build}/tools/cudapool-analyze" "$2") ;;
    *) echo "tools_speed.sh: unknown tool '$1'" >&2; exit 2 ;;
  esac
}

# measure NAME LOG EVENTS: runs the tool and prints its table row.
measure() {
  local name=$1 log=$2 events=$3 rc=0 seconds rss note=""
  tool_command "$name" "$log"
  rm -f "$work/out.html" "$work/out.json" "$work/out.pickle"
  (ulimit -v $((memory_gb * 1024 * 1024))
   exec /usr/bin/time -v -o "$work/time.txt" timeout --signal=KILL "$limit" "${cmd[@]}") \
    >"$work/stdout.txt" 2>"$work/stderr.txt" || rc=$?
  seconds=$(sed -n 's/.*Elapsed (wall clock) time .*): //p' "$work/time.txt" |
            awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s }')
  cpu=$(awk -F': ' '/User time|System time/ { s += $2 } END { print s }' "$work/time.txt")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
  if [ "$rc" -eq 137 ] || [ "$rc" -eq 124 ]; then
    printf '| %s | %s | > %s | | | | stopped after %s s |\n' "$events" "$name" "$limit" "$limit"
    return
  fi
  if [ "$rc" -ne 0 ]; then
    note="exit $rc: $(grep -v '^\s*$' "$work/stderr.txt" | grep -v '^Command exited' | tail -n 1 | cut -c1-120 | tr '|' '/')"
  elif [ "$name" = tune ]; then
    note="$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["logs"][0]["results"]))' "$work/stdout.txt") settings"
  fi
  python3 - "$events" "$name" "$seconds" "$cpu" "$rss" "$note" <<'PY'
import sys
events, name, note = int(sys.argv[1]), sys.argv[2], sys.argv[6]
seconds, cpu, rss = float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
rate = "%.2f M" % (events / seconds / 1e6) if seconds > 0 else ""
s = lambda x: ("%.2f" if x < 10 else "%.1f") % x
print("| %d | %s | %s | %s | %s | %d MB | %s |" % (events, name, s(seconds), s(cpu), rate,
                                                  round(rss / 1024), note))
PY
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(free -g | awk '/^Mem:/ {print $2}') GB;" \
     "$(date -u '+%F %H:%M UTC'); commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "logs: make_training_log ${gen_args:+$gen_args }$([ "$requests" = 1 ] && echo '--requests-only ')(compress: $compress);" \
     "limits: $limit s, $memory_gb GB of address space per tool"
for n in $sizes; do
  [ "$requests" = 1 ] && log="$work/train-$n-requests.jsonl${ext}" || log="$work/train-$n.jsonl${ext}"
  free_kb=$(df -Pk "$work" | awk 'NR == 2 {print $4}')
  if [ "$compress" = none ] && [ $((n / 1024 * 250)) -gt "$free_kb" ]; then
    echo "tools_speed.sh: $n events need about $((n / 1024 / 1024 * 250)) GB in $work; $((free_kb / 1024 / 1024)) GB free: use --compress zst" >&2
    exit 1
  fi
  gen_cmd=("$gen" --events "$n")
  [ "$requests" = 1 ] && gen_cmd+=(--requests-only)
  # shellcheck disable=SC2206  # --gen's words are separate arguments
  [ -n "$gen_args" ] && gen_cmd+=($gen_args)
  start=$(date +%s.%N)
  case "$compress" in
    none) "${gen_cmd[@]}" "$log" 2>"$work/gen.txt" ;;
    zst) "${gen_cmd[@]}" - 2>"$work/gen.txt" | zstd -q -3 -c >"$log" ;;
    gz) "${gen_cmd[@]}" - 2>"$work/gen.txt" | gzip -6 -c >"$log" ;;
  esac
  end=$(date +%s.%N)
  events=$(sed -n 's/.*: \([0-9]*\) events,.*/\1/p' "$work/gen.txt")
  bytes=$(stat -c %s "$log")
  echo
  echo "### $events events: $bytes bytes ($(python3 -c "print('%.1f' % ($bytes / $events))") bytes an event), written in $(python3 -c "print('%.0f' % ($end - $start))") s; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
  echo "| events | tool | seconds | CPU seconds | events/s | peak memory | note |"
  echo "| --- | --- | --- | --- | --- | --- | --- |"
  for t in $tools; do measure "$t" "$log" "$events"; done
  echo
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
  [ "$keep" = 1 ] || rm -f "$log"
done
