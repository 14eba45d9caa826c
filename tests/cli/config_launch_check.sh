#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/config_launch_check.sh: cudapool-config's answers for `cudapool run`, in key=value
# lines: --launch-check (strict:True on and off, errors, the refusal, where the conf came from, the
# log template expanded for a pid and its destination's warning, stderr as the shim says it) and
# --log-files (the files a template with %p, %r, %h and %% can name: the numbered NAME.1 ...
# NAME.99, the uncompressed name of a .zst log, devices and FIFOs; a hostile template's bytes taken
# as they are, never as a glob or as shell). Then `cudapool run` with that hostile template: no
# shell expansion of it, and the note at exit said only when no log came. Not here: the human
# table (config_tool.sh), run's other messages (run_checks.sh, run_front_door.sh).
set -euo pipefail
build="$CUDAPOOL_BUILD_DIR"
config="$build/tools/cudapool-config"
fail() { echo "FAIL: $*" >&2; exit 1; }
unset CUDAPOOL_CONF PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF CUDAPOOL_LOG CUDAPOOL_SUMMARY \
  CUDAPOOL_DISABLE CUDAPOOL_LOG_LEVEL RANK OMPI_COMM_WORLD_RANK SLURM_PROCID
tmp=$(mktemp -d)
io=$(mktemp -d)
trap 'rm -rf "$tmp" "$io"' EXIT

# check ARGS...: cudapool-config ARGS; sets rc, out, err.
check() {
  rc=0
  "$config" "$@" >"$io/out" 2>"$io/err" || rc=$?
  out=$(cat "$io/out")
  err=$(cat "$io/err")
}

# ---- --launch-check: the settings in force -------------------------------------------------------
check --launch-check
[ $rc -eq 0 ] && [ -z "$err" ] && [ "$out" = "strict=0
errors=0
refuse=0
conf_from=" ] || fail "nothing set: exit $rc: $out / $err"
CUDAPOOL_CONF='strict:True' check --launch-check
[ $rc -eq 0 ] && [ -z "$err" ] && [ "$out" = "strict=1
errors=0
refuse=0
conf_from=CUDAPOOL_CONF" ] || fail "strict, no errors: exit $rc: $out / $err"
PYTORCH_CUDA_ALLOC_CONF='bogus:1' check --launch-check
[ $rc -eq 1 ] && [ "$err" = "cudapool: Invalid conf pair: bogus:1 (unknown key)" ] &&
  [ "$out" = "strict=0
errors=1
refuse=0
conf_from=PYTORCH_CUDA_ALLOC_CONF" ] || fail "errors, not strict: exit $rc: $out / $err"
PYTORCH_ALLOC_CONF='strict:True,bogus:1,max_split_size_mb:x' check --launch-check
[ $rc -eq 1 ] && [ "$(wc -l <<<"$err")" -eq 2 ] && [ "$out" = "strict=1
errors=2
refuse=1
conf_from=PYTORCH_ALLOC_CONF" ] || fail "strict with errors: exit $rc: $out / $err"

# ---- --launch-check: CUDAPOOL_LOG ------------------------------------------------------------------
CUDAPOOL_LOG="$tmp/run-%p-%r-%h-100%%.jsonl" RANK=3 check --launch-check --pid 4242
[ $rc -eq 0 ] && [ -z "$err" ] &&
  grep -qxF "log=$tmp/run-4242-3-$(hostname | tr / _)-100%.jsonl" <<<"$out" &&
  grep -qx "log_ok=1" <<<"$out" || fail "a good template: exit $rc: $out / $err"
CUDAPOOL_LOG="$tmp/no/such/dir/x-%p" check --launch-check --pid 7
[ $rc -eq 1 ] && grep -qxF "log=$tmp/no/such/dir/x-7" <<<"$out" && grep -qx "log_ok=0" <<<"$out" &&
  [ "$err" = "cudapool: log $tmp/no/such/dir/x-7: cannot create (No such file or directory): no log" ] ||
  fail "a missing directory: exit $rc: $out / $err"
CUDAPOOL_LOG="$tmp/x-%y" check --launch-check
[ $rc -eq 1 ] && ! grep -q "^log=" <<<"$out" && grep -qx "log_ok=0" <<<"$out" &&
  grep -qF "unknown %y" <<<"$err" || fail "a bad template: exit $rc: $out / $err"
# refused: the shim stops before the log, so its warning is not said (log_ok still answers)
CUDAPOOL_CONF='strict:True,bogus:1' CUDAPOOL_LOG="$tmp/x-%y" check --launch-check
[ $rc -eq 1 ] && [ "$err" = "cudapool: Invalid conf pair: bogus:1 (unknown key)" ] &&
  grep -qx "refuse=1" <<<"$out" && grep -qx "log_ok=0" <<<"$out" ||
  fail "refused with a bad template: exit $rc: $out / $err"
# a name with a newline stays on one line
CUDAPOOL_LOG="$tmp/a
b-%p" check --launch-check --pid 1
grep -qxF "log=$tmp/a\\nb-1" <<<"$out" || fail "a newline in the name: $out"
check --launch-check --pid x
[ $rc -eq 2 ] && grep -qF "not a pid: x" <<<"$err" || fail "--pid x: exit $rc: $err"
check --launch-check extra
[ $rc -eq 2 ] || fail "an extra argument: exit $rc"

# ---- --log-files -------------------------------------------------------------------------------------
# lists ARGS...: --log-files ARGS, and its lines must be exactly the rest of the lines given.
lists() {
  local template=$1 want
  shift
  check --log-files "$template"
  want=$(printf '%s\n' "$@")
  [ $rc -eq 0 ] && [ -z "$err" ] && [ "$out" = "$want" ] ||
    fail "--log-files $template: exit $rc, got:
$out
wanted:
$want
$err"
}
mkdir "$tmp/p"
touch "$tmp/p/run-1.jsonl" "$tmp/p/run-22.jsonl.1" "$tmp/p/run-22.jsonl.99" \
  "$tmp/p/run-22.jsonl.100" "$tmp/p/run-22.jsonl.0" "$tmp/p/run-22.jsonl.05" \
  "$tmp/p/run-22.jsonl.bak" "$tmp/p/run-.jsonl" "$tmp/p/other.jsonl" "$tmp/p/.run-9.jsonl"
mkdir "$tmp/p/run-dir.jsonl"
mkfifo "$tmp/p/run-fifo.jsonl"
lists "$tmp/p/run-%p.jsonl" "file=$tmp/p/run-.jsonl" "file=$tmp/p/run-1.jsonl" \
  "file=$tmp/p/run-22.jsonl.1" "file=$tmp/p/run-22.jsonl.99" "stream=$tmp/p/run-fifo.jsonl"
lists "$tmp/p/run-%r.jsonl.1" "file=$tmp/p/run-22.jsonl.1"
lists "$tmp/p/other.jsonl" "file=$tmp/p/other.jsonl"
lists "$tmp/p/none-%p.jsonl"
# %h, also in a folder's name; %% is one '%'
mkdir "$tmp/h-node1" "$tmp/h-node2"
touch "$tmp/h-node1/r0.log" "$tmp/h-node2/r1.log.2" "$tmp/h-node2/x.log" "$tmp/h-node1/100%.log" \
  "$tmp/h-node1/100%%.log"
lists "$tmp/h-%h/r%r.log" "file=$tmp/h-node1/r0.log" "file=$tmp/h-node2/r1.log.2"
lists "$tmp/h-%h/100%%.log" "file=$tmp/h-node1/100%.log"
# a .zst log: also the plain name written when libzstd is missing
touch "$tmp/p/z-5.jsonl.zst" "$tmp/p/z-6.jsonl" "$tmp/p/z-7.jsonl.3" "$tmp/p/z-8.jsonl.zst.2"
lists "$tmp/p/z-%p.jsonl.zst" "file=$tmp/p/z-5.jsonl.zst" "file=$tmp/p/z-6.jsonl" \
  "file=$tmp/p/z-7.jsonl.3" "file=$tmp/p/z-8.jsonl.zst.2"
# a bad template: its warning, nothing listed
check --log-files "$tmp/p/run-%q"
[ $rc -eq 1 ] && [ -z "$out" ] && grep -qF "unknown %q" <<<"$err" || fail "--log-files %q: $rc $err"
check --log-files
[ $rc -eq 2 ] || fail "--log-files without a value: exit $rc"

# ---- a hostile template: spaces, quotes, *, ?, [, \, $(...), a newline -------------------------------
# (in $tmp/h, where the command substitution, were it run, would leave "pwned")
mkdir "$tmp/h"
cd "$tmp/h"
hostile="$tmp/h/a b'\"*?[x]\\\$(touch pwned)
-%p.log"
# decoy: a name the template would match were it a glob unescaped (*: ZZ, ?: Q, [x]: x, \$: $)
decoy="$tmp/h/a b'\"ZZQx\$(touch pwned)
-%p.log"
touch -- "${hostile/\%p/123}" "${decoy/\%p/123}"
lists "$hostile" "file=$tmp/h/a b'\"*?[x]\\\\\$(touch pwned)\\n-123.log"
lists "$decoy" "file=$tmp/h/a b'\"ZZQx\$(touch pwned)\\n-123.log"
[ ! -e "$tmp/h/pwned" ] || fail "the hostile template ran a command"
rm -- "${hostile/\%p/123}" "${decoy/\%p/123}"

# ---- cudapool run with it: the C++ names the files, the shell expands nothing -----------------------
if [ -f "$build/shim/libcudapool.so" ] && [ -n "${CUDAPOOL_SOURCE_DIR:-}" ]; then
  export CUDAPOOL_BUILD_DIR
  # run ARGS...: `cudapool run ARGS`; sets rc and err (its stderr: the template's newline is said
  # as it is, so the note takes two lines).
  run() {
    rc=0
    "$CUDAPOOL_SOURCE_DIR/scripts/cudapool" run "$@" >"$io/out" 2>"$io/err" || rc=$?
    err=$(cat "$io/err")
  }
  run --log "$hostile" -- true
  [ $rc -eq 0 ] && [ "$err" = "cudapool run: true made no CUDA call under the shim: nothing was logged (CUDAPOOL_LOG=$hostile)" ] ||
    fail "run, hostile template, nothing logged: exit $rc: $(cat "$io/err")"
  # COMMAND writes a file the template names (its own pid): that is a log, nothing said
  run --log "$hostile" -- sh -c 'n=$1; : >"${n%%\%p*}$$${n#*%p}"' sh "$hostile"
  [ $rc -eq 0 ] && [ -z "$err" ] || fail "run, hostile template, a file made: exit $rc: $(cat "$io/err")"
  # a decoy that only the template as a glob would name is no log
  run --log "$hostile" -- sh -c 'n=$1; : >"${n%%\%p*}$$${n#*%p}"' sh "$decoy"
  [ "$err" = "cudapool run: sh made no CUDA call under the shim: nothing was logged (CUDAPOOL_LOG=$hostile)" ] ||
    fail "run, hostile template, a decoy made: exit $rc: $(cat "$io/err")"
  [ ! -e "$tmp/h/pwned" ] || fail "run: the hostile template ran a command"
  # strict:True with errors: refused, the conf's variable named (from --launch-check's conf_from)
  PYTORCH_CUDA_ALLOC_CONF='strict:True,bogus:1' run -- true
  [ $rc -eq 1 ] && [ "$err" = "cudapool: Invalid conf pair: bogus:1 (unknown key)
cudapool: strict:True and the settings in PYTORCH_CUDA_ALLOC_CONF have errors: refusing to start" ] ||
    fail "run, strict refusal: exit $rc: $err"
fi
echo "config_launch_check: ok"
