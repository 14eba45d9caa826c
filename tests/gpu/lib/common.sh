# SPDX-License-Identifier: Apache-2.0
# tests/gpu/lib/common.sh: the helpers of the GPU suite's sections: the PASS/FAIL/INFO lines and
# their counters, the time budget, running a program in a mode (raw, shim, shim:CONF, disable) with
# its log shown, the verdicts and the preload check, and the checks several sections share (same
# RESULT lines, same losses, EXPECTED-UNSAFE runs, a Python check in two modes, a logged run
# replayed). Sourced by tests/gpu/run.sh, which sets the variables used here (REPO, HERE, SHIM,
# WORK, BIN, LOGS, PY, BUDGET, REPLAY, START, the counters); not a script to run, not the build
# (lib/build.sh), and no section's own checks (tests/gpu/sections/).
# shellcheck shell=bash

pass() {
  N_PASS=$((N_PASS + 1))
  echo "PASS $*"
}
fail() {
  local name=$1
  shift
  N_FAIL=$((N_FAIL + 1))
  echo "FAIL $name: $*"
}
info() { echo "INFO $*"; }
remaining() { echo $((BUDGET - (SECONDS - START))); }

# The first lines of a log that say what went wrong.
why() {
  local w
  w=$(grep -E 'ERROR|CHECK-FAIL|CUDA error|CUDA driver error|FAILED|Traceback|Error|error:|Segmentation|Aborted|core dumped' "$1" 2>/dev/null |
    head -n 4 | cut -c1-300 | tr '\n' ' ')
  [ -n "$w" ] || w=$(tail -n 3 "$1" 2>/dev/null | cut -c1-300 | tr '\n' ' ')
  echo "$w"
}

# run NAME TIMEOUT MODE CMD...: runs CMD with its output in $LOGS/NAME.log, then shows the log
# (indented; torch_train's per-step loss lines left out). MODE: raw (no shim), shim (the shim,
# default settings), shim:CONF (the shim with CUDAPOOL_CONF=CONF), disable (the shim loaded with
# CUDAPOOL_DISABLE=1). Returns CMD's exit status; 124/137 timed out, 125 not run (time budget).
run() {
  local name=$1 tmo=$2 mode=$3
  shift 3
  local log="$LOGS/$name.log" rem
  rem=$(remaining)
  if ((rem < 5)); then
    echo "(not run: time budget of $BUDGET s used up)" >"$log"
    echo "---- $name: not run (time budget)"
    return 125
  fi
  ((tmo > rem)) && tmo=$rem
  local -a e=(env -u CUDAPOOL_CONF -u CUDAPOOL_DISABLE -u LD_PRELOAD)
  # GPU_TESTS_CONF_EXTRA (run.sh): pairs added to every shim run's conf string.
  local extra="${GPU_TESTS_CONF_EXTRA:-}" conf
  case $mode in
    raw) ;;
    shim)
      e+=("LD_PRELOAD=$SHIM")
      [ -n "$extra" ] && e+=("CUDAPOOL_CONF=$extra")
      ;;
    shim:*)
      conf=${mode#shim:}
      e+=("LD_PRELOAD=$SHIM" "CUDAPOOL_CONF=$conf${extra:+,$extra}")
      ;;
    disable) e+=("LD_PRELOAD=$SHIM" "CUDAPOOL_DISABLE=1") ;;
    *) echo "run: bad mode $mode" >&2 ;;
  esac
  local t0=$SECONDS rc
  timeout -k 10 "$tmo" "${e[@]}" "$@" >"$log" 2>&1
  rc=$?
  echo "---- $name [$mode] rc $rc, $((SECONDS - t0)) s: ${*#"$BIN"/}"
  grep -v '^loss [0-9]' "$log" | cut -c1-400 | sed -e 's/^/    | /'
  return $rc
}

# verdict NAME RC LOG [DETAIL]: PASS on status 0, else FAIL saying why.
verdict() {
  local name=$1 rc=$2 log=$3 detail=${4:-}
  case $rc in
    0) pass "$name" "$detail" ;;
    125) fail "$name" "skipped: time budget" ;;
    124 | 137) fail "$name" "timed out; $(why "$log")" ;;
    *)
      if ((rc > 128)); then
        fail "$name" "killed by signal $((rc - 128)); $(why "$log")"
      else
        fail "$name" "exit $rc; $(why "$log")"
      fi
      ;;
  esac
}

# In a run with the shim: a program that got as far as its banner must report libcudapool mapped
# (one that died earlier fails its own check).
preload_check() {
  local name=$1 rc=$2 log=$3
  [ "$rc" = 125 ] && return
  if grep -q 'shim not-loaded' "$log"; then
    fail "$name-preload" "the program does not see libcudapool mapped (LD_PRELOAD=$SHIM)"
  fi
}

# checked_run NAME TIMEOUT MODE DETAIL CMD...: run, then (under the shim) the preload check, then
# the verdict with DETAIL. Returns CMD's status.
checked_run() {
  local name=$1 tmo=$2 mode=$3 detail=$4 rc
  shift 4
  run "$name" "$tmo" "$mode" "$@"
  rc=$?
  [ "$mode" = raw ] || preload_check "$name" $rc "$LOGS/$name.log"
  verdict "$name" $rc "$LOGS/$name.log" "$detail"
  return $rc
}

# "512B=180ns 1048576B=..." from alloc_basic / driver_api output.
bare_ns() {
  awk '/^size [0-9]+:/ { s = $2; sub(":", "", s); for (i = 1; i <= NF; i++) if ($i == "bare") printf "%sB=%sns ", s, $(i + 2) }' "$1"
}

# The name a run mode gets in check names: raw, default, or the conf string with ':' and ','
# as '-' (reuse_fence-sync, thread_cache-always).
mode_tag() {
  local tag=${1#shim}
  tag=${tag#:}
  tag=${tag//[:,]/-}
  echo "${tag:-default}"
}

# "alloc 11, alloc_async 15, ..." from a log: each action and its count.
action_counts() {
  grep -o '"action":"[a-z_]*"' "$1" | sed 's/"action"://; s/"//g' | sort | uniq -c |
    awk '{ printf "%s%s %s", (NR > 1 ? ", " : ""), $2, $1 }'
}

# logs_ready CHECK: before a section's logged runs, one FAIL named CHECK when the replay tool is
# missing (status 1); else sets ALOGS, the directory of the allocation logs.
logs_ready() {
  if [ ! -x "$REPLAY" ]; then
    fail "$1" "$REPLAY is not built (set CUDAPOOL_REPLAY)"
    return 1
  fi
  ALOGS="$WORK/alloc-logs"
  mkdir -p "$ALOGS"
}

# in_modes PROGRAM TIMEOUT DETAIL MODE...: runs $BIN/PROGRAM once per mode (checks PROGRAM-<tag>,
# mode_tag), each with the preload check under the shim and a verdict whose detail is every line
# part of the output matching the extended regex DETAIL, joined by "; ". Status 1 (and one FAIL)
# when the program was not built; 2 when it prints "PROGRAM: skipped" (it cannot run on this
# machine: one INFO line, the other modes are not run); else 0.
in_modes() {
  local program=$1 tmo=$2 detail=$3 mode tag rc log
  shift 3
  have "$program" || {
    fail "$program" "not built"
    return 1
  }
  for mode in "$@"; do
    tag="$program-$(mode_tag "$mode")"
    run "$tag" "$tmo" "$mode" "$BIN/$program"
    rc=$?
    log="$LOGS/$tag.log"
    if [ $rc = 0 ] && grep -q "^$program: skipped" "$log"; then
      info "$program: $(grep -o 'skipped.*' "$log" | head -1): not run"
      return 2
    fi
    [ "$mode" = raw ] || preload_check "$tag" $rc "$log"
    verdict "$tag" $rc "$log" "$(grep -oE "$detail" "$log" | paste -sd ';' | sed 's/;/; /g')"
  done
  return 0
}

# The largest allocation log of log_run NAME (a helper process may leave small ones).
largest_log() {
  ls -S "$ALOGS/$1"-*.jsonl 2>/dev/null | head -n 1
}

have() { [ -x "$BIN/$1" ]; }

# none_run NAME TIMEOUT CASES WHY CMD...: CMD under reuse_fence:none, whose data loss (exit 3,
# "old data CORRUPTED" lines) is reported as EXPECTED-UNSAFE, not failed.
none_run() {
  local name=$1 tmo=$2 cases=$3 why=$4 rc log
  shift 4
  run "$name" "$tmo" shim:reuse_fence:none "$@"
  rc=$?
  log="$LOGS/$name.log"
  preload_check "$name" $rc "$log"
  if [ $rc = 3 ]; then
    N_UNSAFE=$((N_UNSAFE + 1))
    echo "EXPECTED-UNSAFE $name: $(grep -c 'old data CORRUPTED' "$log") of $cases cases lost the old data ($why)"
  else
    verdict "$name" $rc "$log" "reuse_fence:none: old data survived in all $cases cases"
  fi
}

# Every RESULT line of the run without the shim ($1) must read the same in the run with it ($2);
# RESULT-SOFT lines may differ (reported, not failed). Test names: $3-<key>.
same_results() {
  local raw=$1 shim=$2 prefix=$3 kind key rest other n=0
  while read -r kind key rest; do
    n=$((n + 1))
    other=$(awk -v k="$kind" -v key="$key" '$1 == k && $2 == key { $1 = ""; $2 = ""; sub(/^  /, ""); print; exit }' "$shim")
    if [ "$rest" = "$other" ]; then
      pass "$prefix-$key" "$rest"
    elif [ "$kind" = RESULT-SOFT ]; then
      info "$prefix-$key: differs, not a failure: without the shim '$rest', with it '${other:-(missing)}'"
    else
      fail "$prefix-$key" "without the shim '$rest', with it '${other:-(missing)}'"
    fi
  done < <(grep -E '^RESULT(-SOFT)? ' "$raw")
  [ $n -gt 0 ] || fail "$prefix" "no RESULT lines from the run without the shim"
}

py_has() { "$PY" -c "import $1" >/dev/null 2>&1; }

# same_losses CHECK REFERENCE LOG: PASS when LOG holds the 50 losses and the parameter sum of the
# reference run (without the shim) bit for bit; FAIL when they differ, or when the reference
# printed no 50 losses to compare.
same_losses() {
  local name=$1 a=$2 b=$3
  if [ "$(grep -c '^loss ' "$a" 2>/dev/null)" != 50 ] || ! grep -q '^params ' "$a"; then
    fail "$name" "the run without the shim printed no 50 losses to compare"
  elif cmp -s <(grep -E '^(loss|params) ' "$a") <(grep -E '^(loss|params) ' "$b"); then
    pass "$name" "50 losses and the parameter sum bit-identical with and without the shim (last $(grep '^loss 49 ' "$a" | cut -d' ' -f3))"
  else
    fail "$name" "losses differ: $(diff <(grep -E '^(loss|params) ' "$a") <(grep -E '^(loss|params) ' "$b") | head -n 4 | tr '\n' ' ')"
  fi
}

# py_check NAME MODULE TIMEOUT WHAT SCRIPT [VAR=VALUE...]: the Python check SCRIPT (exit 0 when
# every check passed) under the shim and without it, with the variables set: checks NAME-shim and
# NAME-raw; one FAIL when MODULE cannot be imported.
py_check() {
  local name=$1 module=$2 tmo=$3 what=$4 script=$5
  shift 5
  if ! py_has "$module"; then
    fail "$module" "$PY cannot import $module"
    return
  fi
  checked_run "$name-shim" "$tmo" shim "$what, shim" env "$@" "$PY" "$HERE/$script"
  checked_run "$name-raw" "$tmo" raw "$what, no shim" env "$@" "$PY" "$HERE/$script"
}

# log_run NAME MIN_ALLOCS CMD...: runs CMD under the shim with its log in $ALOGS/NAME-%p.jsonl.
log_run() {
  local name=$1 min=$2
  shift 2
  local rc f out ok=1 n=0 allocs=""
  rm -f "$ALOGS/$name"-*.jsonl
  run "log-$name" 240 shim env CUDAPOOL_LOG="$ALOGS/$name-%p.jsonl" "$@"
  rc=$?
  preload_check "log-$name" $rc "$LOGS/log-$name.log"
  if [ $rc != 0 ]; then
    verdict "log-$name" $rc "$LOGS/log-$name.log"
    return
  fi
  for f in "$ALOGS/$name"-*.jsonl; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    # A helper process (a compiler, a probe) may log a few events; the main one must reach MIN.
    if out=$("$PY" "$HERE/../log_check.py" --replay "$REPLAY" "$f" 2>&1); then
      allocs+="${f##*/}: $out; "
      echo "    | log_check ${f##*/}: $out"
    else
      ok=0
      fail "log-$name-check" "$out"
    fi
  done
  if [ $n = 0 ]; then
    fail "log-$name" "no log file was written ($ALOGS/$name-*.jsonl)"
    return
  fi
  [ $ok = 1 ] || return
  local best
  best=$(for f in "$ALOGS/$name"-*.jsonl; do grep -c '"action":"alloc"' "$f"; done | sort -n | tail -n 1)
  if [ "${best:-0}" -ge "$min" ]; then
    pass "log-$name" "$n log file(s), every line checked, replay equal to the summary; ${allocs%; }"
  else
    fail "log-$name" "at most $best alloc events in a log, want at least $min: the allocations did not reach the pool"
  fi
}
