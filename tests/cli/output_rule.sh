#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/output_rule.sh: the one rule for what `report --html OUT`, `export --memory-viz OUT`,
# `export --perfetto OUT` and `snapshot -o OUT` may write (issue 26 item 2; outfile.py,
# docs/report.md "The output file"): never one of the inputs (the same file, by device and inode:
# through a symbolic or hard link, or stdin), never a cudapool log whatever its name (the forgotten
# output name of `report --html run-*.jsonl`), never a directory or a new name in /dev: a usage
# error (exit 2) naming the argument, the file untouched, mode included. An earlier page or export
# is replaced with --force (kept without it: output_force.sh); a FIFO is written as it is (not
# replaced by a file). Not here: how the file is written (output_private.sh).
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
devname="/dev/cudapool-output-rule-$$.html"
trap 'rm -rf "$tmp"; rm -f "$devname"' EXIT

# refused WHAT ARGS...: `cudapool ARGS` exits 2 with one message and no traceback
refused() {
  local what=$1 rc=0
  shift
  cudapool "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  [ $rc -eq 2 ] || fail "$what: exit $rc, not 2: $(tail -c 300 "$tmp/err")"
  if grep -q Traceback "$tmp/err"; then fail "$what: a traceback"; fi
}
# untouched FILE WHAT: FILE still has the log's bytes and mode 0600
untouched() {
  cmp -s "$1" "$1.orig" || fail "$2: $1 was written over"
  [ "$(stat -c %a "$1")" = 600 ] || fail "$2: $1's mode is now $(stat -c %a "$1")"
}
mkdir "$tmp/job"
for r in 0 1; do
  cp "$fx/normal.jsonl" "$tmp/job/run-$r.jsonl"
  chmod 600 "$tmp/job/run-$r.jsonl"
  cp "$tmp/job/run-$r.jsonl" "$tmp/job/run-$r.jsonl.orig"
done
logs=("$tmp/job/run-0.jsonl" "$tmp/job/run-1.jsonl")
log0=${logs[0]}

# ---- the output name forgotten: the first log taken for OUT ------------------------------------
refused "report --html run-*.jsonl" report --html "${logs[@]}"
has "--html $log0 is a cudapool log, not an output" "$tmp/err"
has "output name forgotten" "$tmp/err"
untouched "$log0" "report --html run-*.jsonl"
refused "export --perfetto run-*.jsonl" export --perfetto "${logs[@]}"
has "--perfetto $log0 is a cudapool log" "$tmp/err"
untouched "$log0" "export --perfetto run-*.jsonl"
refused "export --memory-viz run-*.jsonl" export --memory-viz "${logs[@]}"
untouched "$log0" "export --memory-viz run-*.jsonl"
refused "snapshot -o a log" snapshot 2147483647 -o "$log0"
has "-o $log0 is a cudapool log" "$tmp/err"
untouched "$log0" "snapshot -o a log"
# a log is a log whatever its name, and without its header line (its first line an event)
cp "$log0" "$tmp/job/old.html"
refused "a log named .html" report --html "$tmp/job/old.html" "$fx/killed.jsonl"
cmp -s "$tmp/job/old.html" "$log0" || fail "a log named .html was written over"
sed 1d "$fx/normal.jsonl" >"$tmp/job/headless.json"
refused "a log without its header" export --perfetto "$tmp/job/headless.json" "$fx/killed.jsonl"

# ---- OUT is an input: the same name, a link, a hard link, stdin --------------------------------
refused "report --html x x" report --html "$log0" "$log0"
has "--html $log0 is the input $log0 (the same file)" "$tmp/err"
untouched "$log0" "report --html x x"
ln -s "$log0" "$tmp/job/link.html"
ln "$log0" "$tmp/job/hard.html"
for out in "$tmp/job/link.html" "$tmp/job/hard.html"; do
  refused "report --html $(basename "$out")" report --html "$out" "$log0"
  has "is the input $log0 (the same file)" "$tmp/err"
  untouched "$log0" "report --html $(basename "$out")"
done
rc=0
cudapool report --html "$log0" - <"$log0" >/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] && grep -qF "is the input <stdin> (the same file)" "$tmp/err" ||
  fail "report --html OUT - <OUT: exit $rc: $(cat "$tmp/err")"
untouched "$log0" "report --html OUT - <OUT"
rm "$tmp/job/link.html" "$tmp/job/hard.html"

# ---- what is not a file to write: a directory, a new name in /dev -------------------------------
refused "a directory" report --html "$tmp/job" "$log0"
has "is a directory" "$tmp/err"
refused "a new name in /dev" report --html "$devname" "$log0"
has "nothing is created in /dev" "$tmp/err"
[ ! -e "$devname" ] || fail "a file was created in /dev"

# ---- allowed: an earlier page or export is replaced with --force; a FIFO is written as it is ---
for force in "" --force; do
  cudapool report --html "$tmp/job/page.html" $force "${logs[@]}" 2>"$tmp/err" ||
    fail "report --html page.html $force: $(cat "$tmp/err")"
  cudapool export --perfetto "$tmp/job/trace.json" $force "${logs[@]}" 2>"$tmp/err" ||
    fail "export --perfetto trace.json $force: $(cat "$tmp/err")"
done
has "<!DOCTYPE html>" "$tmp/job/page.html"
mkfifo "$tmp/job/fifo"
cat "$tmp/job/fifo" >"$tmp/job/from-fifo" &
reader=$!
cudapool report --html "$tmp/job/fifo" "$log0" 2>"$tmp/err" || fail "report --html FIFO: $(cat "$tmp/err")"
wait "$reader"
[ -p "$tmp/job/fifo" ] || fail "the FIFO was replaced by a file"
has "<!DOCTYPE html>" "$tmp/job/from-fifo"
# a FIFO nobody reads: an error, not a wait
rc=0
timeout 120 python3 -m cudapool_analysis export --perfetto "$tmp/job/fifo" "$log0" 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] && grep -q "no process reads the FIFO" "$tmp/err" || fail "a FIFO without a reader: exit $rc"
[ -p "$tmp/job/fifo" ] || fail "the FIFO without a reader was replaced"
for r in 0 1; do untouched "${logs[$r]}" "the allowed outputs"; done
echo "output_rule: ok"
