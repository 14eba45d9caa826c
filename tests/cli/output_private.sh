#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/output_private.sh: how the pages and exports are written (issue 26 items 10 and 12;
# outfile.write_output, docs/report.md "The output file"): as a private temporary file in OUT's
# directory, renamed when whole, so a symbolic link planted at a name the command would write
# through (OUT.tmp, as export and snapshot -o used) leads nowhere: its target is never written;
# mode 0600 (the logs' mode) less what the umask removes, whatever the umask adds; no temporary
# file left after a success or a failure. snapshot -o is checked the same way against a live
# process by tests/fakecuda/control_check.py. Not here: which OUT may be written (output_rule.sh).
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"

# write KIND OUT [--force]: one of the three commands that write a file, on the fixture log
write() {
  case $1 in
    html) cudapool report --html "$2" ${3:+"$3"} "$fx/normal.jsonl" ;;
    memviz) cudapool export --memory-viz "$2" ${3:+"$3"} "$fx/normal.jsonl" ;;
    perfetto) cudapool export --perfetto "$2" ${3:+"$3"} "$fx/normal.jsonl" ;;
  esac
}
mkdir "$tmp/out" "$tmp/victim"
for kind in memviz perfetto html; do
  out="$tmp/out/$kind.out"
  # ---- a link planted where a temporary file could be: its target is untouched ---------------
  echo "the victim's data" >"$tmp/victim/$kind"
  chmod 644 "$tmp/victim/$kind"
  ln -s "$tmp/victim/$kind" "$out.tmp"
  write "$kind" "$out" 2>"$tmp/err" || fail "$kind: exit $?: $(cat "$tmp/err")"
  [ "$(cat "$tmp/victim/$kind")" = "the victim's data" ] ||
    fail "$kind: the file behind the link at $out.tmp was written over"
  [ "$(stat -c %a "$tmp/victim/$kind")" = 644 ] || fail "$kind: the victim's mode changed"
  [ -f "$out" ] && [ ! -L "$out" ] || fail "$kind: $out is not a regular file of its own"
  rm "$out.tmp"
  no_temporary "$out" || fail "$kind: a temporary file left behind: $(ls -A "$tmp/out")"

  # ---- the mode: 0600 as the logs, less what the umask removes --------------------------------
  for mask in 022 000 077 277; do
    rm -f "$out"
    (umask $mask && write "$kind" "$out" 2>"$tmp/err") || fail "$kind, umask $mask: $(cat "$tmp/err")"
    want=$(printf '%o' $((0600 & ~0$mask)))
    [ "$(stat -c %a "$out")" = "$want" ] ||
      fail "$kind, umask $mask: mode $(stat -c %a "$out"), not $want"
  done
  chmod 600 "$out"
  # an existing OUT replaced (--force: output_force.sh): the new file's mode is 0600 too, not the
  # old file's
  chmod 644 "$out"
  write "$kind" "$out" --force 2>"$tmp/err" || fail "$kind: replacing: $(cat "$tmp/err")"
  [ "$(stat -c %a "$out")" = 600 ] || fail "$kind: the replaced file's mode is $(stat -c %a "$out")"
  no_temporary "$out" || fail "$kind: a temporary file left behind: $(ls -A "$tmp/out")"
done

# ---- a failure half way (a log that is not one, after a good one): OUT as it was, no temporary -
printf 'hello\n' >"$tmp/text.jsonl"
echo old >"$tmp/out/keep.json"
rc=0
cudapool export --perfetto "$tmp/out/keep.json" --force "$fx/normal.jsonl" "$tmp/text.jsonl" 2>"$tmp/err" || rc=$?
has "text.jsonl" "$tmp/err"     # the log's failure, not OUT's existence
[ $rc -eq 1 ] && [ "$(cat "$tmp/out/keep.json")" = old ] || fail "a failed export touched OUT"
no_temporary "$tmp/out/keep.json" || fail "a failed export left a temporary file: $(ls -A "$tmp/out")"
# a directory that cannot be written: a message, no traceback
if [ "$(id -u)" -ne 0 ]; then
  mkdir "$tmp/ro" && chmod 555 "$tmp/ro"
  rc=0
  cudapool report --html "$tmp/ro/page.html" "$fx/normal.jsonl" 2>"$tmp/err" || rc=$?
  [ $rc -eq 1 ] && grep -q "cannot write $tmp/ro/page.html" "$tmp/err" || fail "read-only dir: exit $rc"
fi
echo "output_private: ok"
