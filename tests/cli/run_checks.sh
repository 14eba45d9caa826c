#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/run_checks.sh: what `scripts/cudapool run` checks before it starts the program, so that a
# program that never touches CUDA (the shim only starts at the first CUDA call) still hears about
# them: the conf string's diagnostics, strict:True refusing to start, a bad log template (a rank
# that climbs out of the folder, a name that is a folder) or a log directory that cannot hold the
# file. Otherwise the program's own exit status comes back. Not
# here: the environment `run` sets (run_command.sh), the shim's own messages (fakecuda tests).
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
lib="$CUDAPOOL_BUILD_DIR/shim/libcudapool.so"
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -f "$lib" ] || { echo "run_checks: libcudapool.so not built (no cuda.h): skipped"; exit 0; }
export CUDAPOOL_BUILD_DIR
unset CUDAPOOL_CONF PYTORCH_ALLOC_CONF PYTORCH_CUDA_ALLOC_CONF CUDAPOOL_LOG CUDAPOOL_SUMMARY \
  CUDAPOOL_DISABLE CUDAPOOL_LOG_LEVEL
tmp=$(mktemp -d)
io=$(mktemp -d)
trap 'rm -rf "$tmp" "$io"' EXIT

# run ARGS...: `cudapool run ARGS`; sets rc, out (stdout) and err (its "cudapool: " lines on stderr:
# not the output of a build the launcher starts when a source is newer than the shim).
run() {
  rc=0
  "$src/scripts/cudapool" run "$@" >"$io/out" 2>"$io/err" || rc=$?
  out=$(cat "$io/out")
  err=$(grep '^cudapool: ' "$io/err" || true)
}

# A bad conf: its diagnostic, before a program that never touches CUDA; the status is the program's.
run --conf 'bogus:1' -- true
[ $rc -eq 0 ] || fail "bad conf, true: exit $rc: $err"
[ "$err" = "cudapool: Invalid conf pair: bogus:1 (unknown key)" ] || fail "bad conf: stderr: $err"
run --conf 'max_split_size_mb:abc' -- sh -c 'echo ran; exit 3'
[ $rc -eq 3 ] && [ "$out" = ran ] || fail "bad conf: exit $rc, out $out"
grep -q "^cudapool: Invalid conf pair: max_split_size_mb:abc" <<<"$err" || fail "bad value: $err"
# The conf from the environment is checked too (the variable the shim would read).
PYTORCH_CUDA_ALLOC_CONF='bogus:2' run -- true
[ $rc -eq 0 ] && [ "$err" = "cudapool: Invalid conf pair: bogus:2 (unknown key)" ] ||
  fail "conf from the environment: exit $rc: $err"
# A good conf and a good template: nothing said, nothing created (no CUDA: no log).
run --conf 'max_split_size_mb:64,strict:True' --log "$tmp/ok-%p-%r-%h.jsonl" -- true
[ $rc -eq 0 ] && [ -z "$err" ] || fail "good settings: exit $rc: $err"
[ -z "$(ls -A "$tmp")" ] || fail "a file was created: $(ls -A "$tmp")"

# strict:True with errors: refused like the shim would, non-zero, the program never started.
run --conf 'strict:True,bogus:1' -- sh -c 'echo started'
[ $rc -eq 1 ] || fail "strict refusal: exit $rc"
[ -z "$out" ] || fail "strict refusal: the program ran: $out"
[ "$err" = "cudapool: Invalid conf pair: bogus:1 (unknown key)
cudapool: strict:True and the settings in CUDAPOOL_CONF have errors: refusing to start" ] ||
  fail "strict refusal: stderr: $err"
CUDAPOOL_CONF='strict:True,garbage_collection_threshold:2' run -- true
[ $rc -eq 1 ] && grep -qx \
  "cudapool: strict:True and the settings in CUDAPOOL_CONF have errors: refusing to start" <<<"$err" ||
  fail "strict refusal from the environment: exit $rc: $err"
# CUDAPOOL_LOG_LEVEL as in the shim: error keeps only the refusal, off says nothing.
CUDAPOOL_LOG_LEVEL=error run --conf 'strict:True,bogus:1' -- true
[ $rc -eq 1 ] && [ "$err" = \
  "cudapool: strict:True and the settings in CUDAPOOL_CONF have errors: refusing to start" ] ||
  fail "CUDAPOOL_LOG_LEVEL=error: exit $rc: $err"
CUDAPOOL_LOG_LEVEL=off run --conf 'strict:True,bogus:1' -- true
[ $rc -eq 1 ] && [ -z "$err" ] || fail "CUDAPOOL_LOG_LEVEL=off: exit $rc: $err"
CUDAPOOL_LOG_LEVEL=error run --conf 'bogus:1' -- true
[ $rc -eq 0 ] && [ -z "$err" ] || fail "CUDAPOOL_LOG_LEVEL=error, a warning: exit $rc: $err"
# --disable (and CUDAPOOL_DISABLE): the shim reads no settings, nothing is checked.
run --disable --conf 'strict:True,bogus:1' -- true
[ $rc -eq 0 ] && [ -z "$err" ] || fail "--disable: exit $rc: $err"
CUDAPOOL_DISABLE=1 run --conf 'strict:True,bogus:1' -- true
[ $rc -eq 0 ] && [ -z "$err" ] || fail "CUDAPOOL_DISABLE=1: exit $rc: $err"

# A bad log template: the shim's message, and the program runs with its status.
run --log "$tmp/run-%x.jsonl" -- sh -c 'exit 5'
[ $rc -eq 5 ] || fail "bad template: exit $rc"
[ "$err" = "cudapool: log path \"$tmp/run-%x.jsonl\": unknown %x at offset $((${#tmp} + 5)) (known: %p %r %h %%): no log" ] ||
  fail "bad template: stderr: $err"
run --log "run-%" -- true
[ "$err" = 'cudapool: log path "run-%": a lone % at the end (write %% for a percent sign): no log' ] ||
  fail "a lone %: $err"
CUDAPOOL_LOG="$tmp/env-%q" run -- true
grep -qF "unknown %q" <<<"$err" || fail "template from the environment: $err"
# A directory that does not exist, or is not one: as the shim would say it at its first CUDA call.
run --log "$tmp/no/such/dir/x-%p.jsonl" -- true
[ $rc -eq 0 ] || fail "missing directory: exit $rc"
grep -qE "^cudapool: log $tmp/no/such/dir/x-[0-9]+\.jsonl: cannot create \(No such file or directory\): no log$" <<<"$err" ||
  fail "missing directory: $err"
: >"$tmp/file"
run --log "$tmp/file/x.jsonl" -- true
[ "$err" = "cudapool: log $tmp/file/x.jsonl: cannot create (Not a directory): no log" ] ||
  fail "a file as the directory: $err"
rm -f "$tmp/file"
# /dev: an existing character device is a destination, nothing else there is created.
run --log /dev/null -- true
[ $rc -eq 0 ] && [ -z "$err" ] || fail "--log /dev/null: exit $rc: $err"
run --log /dev/cudapool-nothing-%p.jsonl -- true
grep -qE "^cudapool: log /dev/cudapool-nothing-[0-9]+\.jsonl: does not exist, and nothing is created in /dev: no log$" <<<"$err" ||
  fail "a new name in /dev: $err"
# A rank that would climb out of the log's folder (logs/%r/ with RANK=..) and a name that is a
# folder: the shim's own messages (cudapool-config --log-template, the same code), nothing made.
mkdir "$tmp/logs"
RANK=.. run --log "$tmp/logs/%r/run.jsonl" -- sh -c 'exit 4'
[ $rc -eq 4 ] || fail "RANK=..: exit $rc"
[ "$err" = "cudapool: log path \"$tmp/logs/%r/run.jsonl\": RANK \"..\" is not a rank for %r (letters, digits, '_' and '-' only): no log" ] ||
  fail "RANK=..: $err"
RANK=7 run --log "$tmp/logs/r%r.jsonl" -- true
[ $rc -eq 0 ] && [ -z "$err" ] || fail "RANK=7: exit $rc: $err"
for name in / . ./ .. "$tmp/logs" "$tmp/logs/"; do
  run --log "$name" -- true
  [ "$err" = "cudapool: log $name: a directory, not a file name: no log" ] || fail "--log $name: $err"
done
[ -z "$(ls -A "$tmp/logs")" ] || fail "a file was created: $(ls -A "$tmp/logs")"
rmdir "$tmp/logs"
# The pid of %p is the program's (exec keeps the launcher's): cudapool-config names that file.
run --log "$tmp/p%p.jsonl" -- sh -c 'echo $$'
[ -z "$err" ] || fail "%p: $err"
[ "$("$CUDAPOOL_BUILD_DIR/tools/cudapool-config" --log-template "$tmp/p%p.jsonl" --pid "$out")" = \
  "log: $tmp/p$out.jsonl" ] || fail "cudapool-config --log-template --pid"
# Both at once: every problem is named.
run --conf 'bogus:1' --log "$tmp/x-%y" -- true
[ "$(echo "$err" | wc -l)" -eq 2 ] || fail "two problems, not two lines: $err"
echo "run_checks: ok"
