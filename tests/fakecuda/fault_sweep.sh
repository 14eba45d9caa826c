#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/fault_sweep.sh: injects one driver fault at a time into the faults scenario
# (programs/scenario_faults.cpp) and checks each run: it exits 0 (the scenario's own checks: only
# the injected error reaches the program, then the call works again; live blocks disjoint, mapped
# and intact; no reuse before queued work ran; all freed, all free; nothing left after a reset),
# within 10 s, by no signal, and the fake reports nothing still allocated at exit
# (FAKECUDA_COUNT_CALLS, src/faults.cpp), unless the fault refused a release (cuMemFree_v2,
# cuMemUnmap, cuMemRelease, cuMemAddressFree: the driver keeps that memory). First a run without
# faults counts every entry point's calls (the scenario's, from its fakecuda_reset_counters on,
# and the shim's); then each (entry point, N) is one run with FAKECUDA_FAIL=entry:N, the entry
# point's default error. Configurations: shim (default settings) and expandable
# (expandable_segments:True): every N of every entry point called (a spread sample above 256
# calls); thread_cache (thread_cache:always), sync (reuse_fence:sync), fraction
# (per_process_memory_fraction:0.99, not in the default list) and fake (the fake alone: checks the
# scenario itself): the first 8 and 8 spread over the rest. Not a test of several faults at once,
# nor of errors that stay (a context broken for good), nor of threads.
# Usage: fault_sweep.sh <cudart_like> <LD_PRELOAD value (libcudapool.so)> <fake libcuda.so.1 dir>
#        [config ...]    (default: shim expandable thread_cache sync fake)
# Environment: FAULT_SWEEP_JOBS (parallel runs, default 2); FAULT_SWEEP_RESULTS=file appends
# every run's result line there.
set -u
if [ "${1:-}" = "--one" ]; then
  # One run: --one <program> <preload> <fake dir> <work dir> <config> <entry> <n>
  shift
  program="$1" preload="$2" fake_dir="$3" work="$4" config="$5" entry="$6" n="$7"
  tag="$config.$entry.$n"
  env_args=(LD_LIBRARY_PATH="$fake_dir" FAKECUDA_DEVICE_MEMORY=256M FAKECUDA_FAIL_FROM_RESET=1
            FAKECUDA_COUNT_CALLS="$work/$tag.report")
  [ "$entry" = none ] || env_args+=(FAKECUDA_FAIL="$entry:$n")
  mode=shim scenario=faults
  case "$config" in
    shim) env_args+=(LD_PRELOAD="$preload") ;;
    thread_cache) env_args+=(LD_PRELOAD="$preload" CUDAPOOL_CONF=thread_cache:always) ;;
    sync) env_args+=(LD_PRELOAD="$preload" CUDAPOOL_CONF=reuse_fence:sync) ;;
    fraction) env_args+=(LD_PRELOAD="$preload" CUDAPOOL_CONF=per_process_memory_fraction:0.99) ;;
    expandable) env_args+=(LD_PRELOAD="$preload" CUDAPOOL_CONF=expandable_segments:True)
                scenario=faults_expandable ;;
    fake) mode=fake ;;
  esac
  env -u CUDAPOOL_CONF -u LD_PRELOAD "${env_args[@]}" timeout -s KILL 10 \
    "$program" "$scenario" "$mode" >"$work/$tag.out" 2>"$work/$tag.err"
  rc=$?
  report="$work/$tag.report"
  why=""
  if [ $rc = 137 ]; then why="hang (killed after 10 s)"
  elif [ $rc -gt 128 ]; then why="crash (signal $((rc - 128)))"
  elif [ $rc != 0 ]; then why="exit $rc: $(grep -m1 "^FAIL" "$work/$tag.err")"
  elif [ ! -s "$report" ]; then why="no report from the fake"
  fi
  if [ -z "$why" ]; then
    # What is left at exit: nothing, unless the driver refused to give memory back.
    left=$(awk '$1 == "outstanding" && $2 != "streams" && $2 != "events" && $3 != 0 {
                  printf "%s %s (%s bytes) ", $2, $3, $4 }' "$report")
    case "$entry" in cuMemFree_v2|cuMemUnmap|cuMemRelease|cuMemAddressFree) refused=1 ;;
                     *) refused=0 ;; esac
    if [ -n "$left" ] && [ $refused = 0 ]; then why="left allocated at exit: $left"; fi
  fi
  note=""
  if [ "$entry" != none ] && ! grep -q "^fault $entry $n .* fired$" "$report" 2>/dev/null; then
    note="not fired"
  elif grep -q "release the driver refused" "$work/$tag.out" 2>/dev/null; then
    note="memory kept by the driver"
  fi
  if [ -n "$why" ]; then
    echo "FAIL $tag: $why"
  else
    echo "ok $tag${note:+ ($note)}"
    rm -f "$work/$tag.out" "$work/$tag.err"
  fi
  exit 0
fi

source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"
self="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"
shift 3
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(shim expandable thread_cache sync fake)
jobs="${FAULT_SWEEP_JOBS:-2}"

start=$(date +%s)
for config in "${configs[@]}"; do
  line=$(bash "$self" --one "$program" "$shim" "$fake_dir" "$work" "$config" none 0)
  case "$line" in ok*) ;; *) fail "$config without faults: $line"; cat "$work/$config.none.0.err"
                             continue ;; esac
  # The cases: entry n, one per line.
  # shim and expandable: every N (a spread sample above 256 calls); the others: the first 8 and 8
  # spread over the rest (they share most paths with shim).
  case "$config" in shim|expandable) dense=256 spread=64 ;; *) dense=8 spread=8 ;; esac
  awk -v dense=$dense -v spread=$spread '
    $1 == "calls" && $2 != "cuGetErrorName" && $2 != "cuGetErrorString" {
      name = $2; count = $3
      for (n = 1; n <= count && n <= dense; n++) print name, n
      if (count > dense) {
        step = (count - dense) / spread
        for (x = dense + step; x < count; x += step) print name, int(x)
        print name, count
      }
    }' "$work/$config.none.0.report" | sort -u -k1,1 -k2,2n >"$work/$config.cases"
  entries=$(cut -d' ' -f1 "$work/$config.cases" | sort -u | wc -l)
  cases=$(wc -l <"$work/$config.cases")
  t0=$(date +%s)
  while read -r entry n; do printf '%s\n%s\n' "$entry" "$n"; done <"$work/$config.cases" |
    xargs -d '\n' -n 2 -P "$jobs" bash "$self" --one "$program" "$shim" "$fake_dir" "$work" \
      "$config" >"$work/$config.results"
  [ -z "${FAULT_SWEEP_RESULTS:-}" ] || cat "$work/$config.results" >>"$FAULT_SWEEP_RESULTS"
  failed=$(grep -c '^FAIL' "$work/$config.results")
  unfired=$(grep -c '(not fired)' "$work/$config.results")
  kept=$(grep -c '(memory kept by the driver)' "$work/$config.results")
  echo "$config: $cases runs over $entries entry points, $failed failed, $unfired not fired" \
       "(a call count that varies), $kept with memory kept after a refused release," \
       "$(( $(date +%s) - t0 )) s"
  if [ "$failed" != 0 ]; then
    grep '^FAIL' "$work/$config.results" | sort -V | head -n 40
    fail "$config: $failed of $cases runs failed"
    # The first failure's output, for the log.
    first=$(grep -m1 '^FAIL' "$work/$config.results" | sed 's/^FAIL \([^:]*\):.*/\1/')
    tail -n 8 "$work/$first.out" "$work/$first.err" 2>/dev/null
  fi
done
echo "$(( $(date +%s) - start )) s in all"
[ $status = 0 ] && echo "ok: every injected fault answered as the driver would, no leak, crash or hang"
exit $status
