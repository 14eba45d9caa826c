#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/input_once.sh: every command reads each input once (issue 26 item 6; inputs.py): a
# log given as - (stdin), as a FIFO or as /dev/stdin gives `export --memory-viz`, `export
# --perfetto`, `report --html` (with --tune) and `report --json --tune` what the regular file gives: the
# same segment and trace counts, the same figures; none blocks (a hang guard of 300 s each, far
# above what they take) or stops early. Both kinds of log: one with pool decisions (normal.jsonl)
# and one of requests only (the example, replayed by cudapool-replay from the one copy).
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
guard() { timeout 300 python3 -m cudapool_analysis "$@"; }
# through LOG HOW OUT ARGS...: `cudapool ARGS` with LOG given as HOW (file, stdin, fifo,
# dev-stdin) where ARGS says @LOG
through() {
  local log=$1 how=$2 out=$3 rc=0 a args=()
  shift 3
  for a in "$@"; do
    case $how:$a in
      file:@LOG) args+=("$log") ;;
      stdin:@LOG) args+=(-) ;;
      fifo:@LOG) args+=("$tmp/fifo") ;;
      dev-stdin:@LOG) args+=(/dev/stdin) ;;
      *) args+=("$a") ;;
    esac
  done
  case $how in
    file) guard "${args[@]}" >"$out" 2>"$tmp/err" || rc=$? ;;
    stdin | dev-stdin) cat "$log" | guard "${args[@]}" >"$out" 2>"$tmp/err" || rc=$? ;;
    fifo)
      rm -f "$tmp/fifo" && mkfifo "$tmp/fifo"
      cat "$log" >"$tmp/fifo" &
      guard "${args[@]}" >"$out" 2>"$tmp/err" || rc=$?
      wait || true
      ;;
  esac
  [ $rc -eq 0 ] || fail "$how: cudapool $*: exit $rc: $(tail -c 400 "$tmp/err")"
}
ex="$src/examples/logs/training-loop.jsonl"
for name in normal example; do
  log="$fx/normal.jsonl"
  [ $name = example ] && log=$ex
  for how in file stdin fifo dev-stdin; do
    through "$log" $how "$tmp/$name.$how.report" report --json --tune @LOG
    through "$log" $how /dev/null export --memory-viz "$tmp/$name.$how.pickle" @LOG
    grep -o "a memory_viz snapshot: [0-9]* segments, [0-9]* trace entries" "$tmp/err" \
      >"$tmp/$name.$how.counts"
    through "$log" $how /dev/null export --perfetto "$tmp/$name.$how.trace" @LOG
    through "$log" $how /dev/null report --html "$tmp/$name.$how.html" --tune @LOG
  done
  python3 - "$tmp" "$name" <<'PY' || fail "$name: an input read otherwise than from its file"
import json, pickle, re, sys
tmp, name = sys.argv[1:]
def load(how, kind):
    path = "%s/%s.%s.%s" % (tmp, name, how, kind)
    if kind == "pickle":
        return pickle.load(open(path, "rb"))
    if kind == "html":
        page = open(path, encoding="utf-8").read()
        d = json.loads(re.search(r'id="cudapool-data">(.*?)</script>', page, re.S).group(1))
        d.pop("generated")
        for log in d["logs"]:
            log.pop("log")
        d["tune"].pop("seconds", None)
        for k in ("pools_replayed", "settings_tried"):  # a file is looked at first: fewer
            d["tune"].pop(k, None)
        for log in d["tune"]["logs"]:
            log.pop("path")
            log.pop("seconds", None)
        return d
    if kind == "counts":
        return open(path).read()
    d = json.load(open(path))
    if kind == "report":
        d.pop("log")
    else:
        for log in d["metadata"]["cudapool"]["logs"]:
            log.pop("log")
        d["metadata"]["cudapool"]["notes"] = [re.sub(r"^\S+: ", "", n)
                                              for n in d["metadata"]["cudapool"]["notes"]]
    return d
for kind in ("report", "pickle", "counts", "trace", "html"):
    want = load("file", kind)
    for how in ("stdin", "fifo", "dev-stdin"):
        got = load(how, kind)
        assert got == want, "%s %s: differs from the file's%s" % (
            how, kind, ": %s vs %s" % (got, want) if kind == "counts" else "")
snap = load("file", "pickle")
print("%s: %d segments, %d trace entries from the file, stdin, a FIFO and /dev/stdin" % (
    name, len(snap["segments"]), sum(len(t) for t in snap["device_traces"])))
PY
done
# stdin named twice is a usage error; an empty stdin is an empty log
rc=0; guard report --html "$tmp/x.html" - - </dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 2 ] || fail "- twice: exit $rc"
rc=0; guard export --perfetto "$tmp/x.json" - </dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 1 ] && grep -q "<stdin> is empty" "$tmp/err" || fail "empty stdin: exit $rc: $(cat "$tmp/err")"
echo "input_once: ok"
