#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/odd_inputs.sh: inputs that are not quite logs (issue 26 item 17), in every command
# that reads logs (report, report --json, report --html, export --memory-viz, --perfetto):
#   - an xz file is named as such with what to do (xzcat LOG > LOG), from a file and from stdin,
#     exit 1, never "not valid UTF-8 (byte 1)"; a gzip file of something else is not a log;
#   - something that is not a log gets the reader's "not a cudapool log" before any replay runs
#     (the replay here is a stand-in that says when it is run);
#   - a failing `--tune` gives the page without its tuning section: exit 0, one line on stderr,
#     the reason in the page's data (report_html.sh draws it in Chromium);
#   - a UTF-8 byte order mark before the header is taken (the C++ replay takes it too:
#     replay_report_agree.sh);
#   - a log name that is not UTF-8 works everywhere and is shown escaped (\xff), never raw.
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
ex="$src/examples/logs/training-loop.jsonl"
# every LOG: the commands that read logs, each writing its output to OUT.N
commands() {
  local log=$1
  echo "report $log"
  echo "report --json $log"
  echo "report --html $tmp/o/page.html $log"
  echo "export --memory-viz $tmp/o/snap.pickle $log"
  echo "export --perfetto $tmp/o/trace.json $log"
}
mkdir "$tmp/o"
# refused WHAT STDIN ARGS...: `cudapool ARGS <STDIN` exits 1, nothing on stdout, no traceback,
# nothing written in $tmp/o; its message in $tmp/err
refused() {
  local what=$1 in=$2 rc=0
  shift 2
  cudapool "$@" <"$in" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 1 ] || fail "$what: cudapool $*: exit $rc, not 1: $(tail -c 300 "$tmp/err")"
  [ ! -s "$tmp/out" ] || fail "$what: cudapool $*: output on stdout"
  if grep -q Traceback "$tmp/err"; then fail "$what: cudapool $*: a traceback"; fi
  [ -z "$(ls -A "$tmp/o")" ] || fail "$what: cudapool $*: wrote $(ls -A "$tmp/o")"
}

# ---- compressed files that the readers do not decode, or that hold no log -------------------------
# (gzip and zstd logs are read: tests/cli/compressed_logs.sh)
printf '\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46' >"$tmp/run.jsonl.xz"
while read -r -a args; do
  refused "xz" /dev/null "${args[@]}"
  has "$tmp/run.jsonl.xz is compressed with xz, which the readers of the log do not decode" "$tmp/err"
  has "decompress it first (xzcat $tmp/run.jsonl.xz > LOG)" "$tmp/err"
  n=${#args[@]}
  args[$((n - 1))]=-
  refused "xz on stdin" "$tmp/run.jsonl.xz" "${args[@]}"
  has "<stdin> is compressed with xz" "$tmp/err"
done < <(commands "$tmp/run.jsonl.xz")
gzip -c "$src/README.md" >"$tmp/readme.gz"

# ---- not a log: the reader says so, and no replay runs ------------------------------------------
cat >"$tmp/replay" <<STUB
#!/bin/sh
touch "$tmp/replay-ran"
exit 1
STUB
chmod +x "$tmp/replay"
for input in "$src/README.md" "$tmp/readme.gz" "$tmp/run.jsonl.xz"; do
  while read -r -a args; do
    rc=0
    CUDAPOOL_REPLAY="$tmp/replay" python3 -m cudapool_analysis "${args[@]}" >/dev/null \
      2>"$tmp/err" || rc=$?
    [ $rc -eq 1 ] || fail "not a log: ${args[*]}: exit $rc"
    [ ! -e "$tmp/replay-ran" ] || fail "not a log: ${args[*]}: the replay ran: $(cat "$tmp/err")"
    if grep -q "replay" "$tmp/err"; then fail "not a log: ${args[*]}: $(cat "$tmp/err")"; fi
    case $input in
      *README.md | *.gz) has "$input is not a cudapool log: none of its" "$tmp/err" ;;
    esac
  done < <(commands "$input")
done

# ---- --tune that fails: the page without it ------------------------------------------------------
printf '#!/bin/sh\necho "tune: out of luck" >&2\nexit 3\n' >"$tmp/tune"
printf '#!/bin/sh\necho "no JSON here"\n' >"$tmp/tune-garbage"
chmod +x "$tmp/tune" "$tmp/tune-garbage"
for tune in "$tmp/tune" "$tmp/tune-garbage"; do
  rm -f "$tmp/o/page.html"
  rc=0
  CUDAPOOL_TUNE=$tune cudapool report --html "$tmp/o/page.html" --tune "$fx/normal.jsonl" \
    2>"$tmp/err" || rc=$?
  [ $rc -eq 0 ] || fail "--tune failing ($tune): exit $rc: $(cat "$tmp/err")"
  [ "$(grep -c -- "--tune" "$tmp/err")" -eq 1 ] && grep -q "the page has no tuning section" "$tmp/err" ||
    fail "--tune failing ($tune): not one line saying so: $(cat "$tmp/err")"
  python3 - "$tmp/o/page.html" <<'PY' || fail "--tune failing ($tune): the page"
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
data = json.loads(re.search(r'id="cudapool-data">(.*?)</script>', page, re.S).group(1))
assert set(data["tune"]) == {"error"} and data["tune"]["error"].startswith("--tune: "), data["tune"]
assert data["logs"][0]["devices"], "the page lost its log"
PY
done
rm -f "$tmp/o/page.html"

# ---- a byte order mark before the header ---------------------------------------------------------
printf '\xef\xbb\xbf' >"$tmp/bom.jsonl"
cat "$fx/normal.jsonl" >>"$tmp/bom.jsonl"
cudapool report --json "$tmp/bom.jsonl" >"$tmp/bom.json" || fail "BOM: report exit $?"
cudapool report --json "$fx/normal.jsonl" >"$tmp/normal.json"
python3 - "$tmp/bom.json" "$tmp/normal.json" <<'PY' || fail "BOM: not the log's report"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert a["malformed_lines"] == 0 and a["header"] is not None, (a["malformed_lines"], a["problems"])
a.pop("log"), b.pop("log")
assert a == b
PY
cudapool export --memory-viz "$tmp/o/bom.pickle" "$tmp/bom.jsonl" 2>/dev/null || fail "BOM: export"
cudapool export --memory-viz "$tmp/o/normal.pickle" "$fx/normal.jsonl" 2>/dev/null
cmp -s "$tmp/o/bom.pickle" "$tmp/o/normal.pickle" || fail "BOM: another snapshot"
rm "$tmp/o/"*.pickle

# ---- a log name that is not UTF-8 ---------------------------------------------------------------
bad=$'run-\xff.jsonl'
cp "$fx/normal.jsonl" "$tmp/$bad"
cd "$tmp"
while read -r -a args; do
  rc=0
  cudapool "${args[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 0 ] || fail "non-UTF-8 name: ${args[*]}: exit $rc: $(tail -c 300 "$tmp/err")"
  if LC_ALL=C grep -q $'\xff' "$tmp/out" "$tmp/err"; then
    fail "non-UTF-8 name: ${args[*]}: the raw byte reaches the output"
  fi
done < <(commands "$bad")
has 'run-\xff.jsonl' "$tmp/err"           # the last: export --perfetto's note
cudapool report "$bad" >"$tmp/out"
has 'cudapool report: run-\xff.jsonl' "$tmp/out"
cudapool report --html $'page-\xfe.html' "$bad" 2>"$tmp/err" || fail "a page named page-\\xfe.html"
has 'wrote page-\xfe.html' "$tmp/err"
grep -q 'cudapool report: run-\\xff.jsonl</title>' $'page-\xfe.html' || fail "the page's title"
echo "odd_inputs: ok"
