#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/compressed_logs.sh: every tool that reads a log reads it plain, gzip or zstd, from a
# file or from stdin (issue 27): cudapool-replay --json, cudapool-tune --json, cudapool-cat,
# report --tune, report --json --tune, report --html --tune, export --memory-viz, export --perfetto, on one
# log given as a plain file, .gz, .zst, a zstd and a gzip file whose names say nothing, and stdin
# plain, gzip and zstd, give the same output (the log's name aside). Both kinds of log: one with
# pool decisions (normal.jsonl) and one of requests only (the example, which the report replays).
# Then bad input, in every tool: a compressed log cut in the middle of a frame is read to the cut
# and said once (exit 0); corrupt data is named with its byte (exit 1, nothing written); xz and
# bzip2 are refused with what to do (exit 1). The progress line: tests/cli/progress_line.sh.
set -euo pipefail
# shellcheck source=tests/cli/common.bash
source "$CUDAPOOL_SOURCE_DIR/tests/cli/common.bash"
bin="$CUDAPOOL_BUILD_DIR/tools"
for t in cudapool-replay cudapool-tune cudapool-cat; do
  [ -x "$bin/$t" ] || fail "$bin/$t: not built"
done
guard() { timeout 300 "$@"; }   # a hang guard, far above what any of them takes
mkdir "$tmp/o"
# The tools, each as `NAME ARGS` with @LOG where the log goes and @OUT for its output file.
tools() {
  cat <<TOOLS
replay $bin/cudapool-replay --json @LOG >@OUT
tune $bin/cudapool-tune --json --threads 2 @LOG >@OUT
cat $bin/cudapool-cat @LOG >@OUT
report python3 -m cudapool_analysis report --tune @LOG >@OUT
json python3 -m cudapool_analysis report --json --tune @LOG >@OUT
html python3 -m cudapool_analysis report --html @OUT --tune @LOG
memviz python3 -m cudapool_analysis export --memory-viz @OUT @LOG
perfetto python3 -m cudapool_analysis export --perfetto @OUT @LOG
TOOLS
}
# run TOOL-LINE INPUT OUT: the tool with INPUT (a path, or stdin:FILE for - fed FILE) as @LOG;
# exit status in $rc, stderr in $tmp/err.
run() {
  local line=$1 input=$2 out=$3 cmd
  local given=$input feed=/dev/null
  case $input in stdin:*) given=- feed=${input#stdin:} ;; esac
  cmd=${line#* }
  cmd=${cmd//@LOG/$given}
  cmd=${cmd//@OUT/$out}
  rc=0
  guard bash -c "$cmd" <"$feed" 2>"$tmp/err" || rc=$?
}

# ---- the same output from every form of the log --------------------------------------------
for name in normal example; do
  log="$fx/normal.jsonl"
  [ $name = example ] && log="$src/examples/logs/training-loop.jsonl"
  d="$tmp/$name"
  mkdir "$d"
  cp "$log" "$d/run.jsonl"
  gzip -c "$log" >"$d/run.jsonl.gz"
  zstd -q -c "$log" >"$d/run.jsonl.zst"
  cp "$d/run.jsonl.zst" "$d/zstd-log"
  cp "$d/run.jsonl.gz" "$d/gzip-log"
  forms=("$d/run.jsonl" "$d/run.jsonl.gz" "$d/run.jsonl.zst" "$d/zstd-log" "$d/gzip-log"
         "stdin:$d/run.jsonl" "stdin:$d/run.jsonl.gz" "stdin:$d/run.jsonl.zst")
  while read -r tool line; do
    i=0
    for input in "${forms[@]}"; do
      out="$tmp/o/$name.$tool.$i"
      run "$tool $line" "$input" "$out"
      [ $rc -eq 0 ] || fail "$name: $tool on $input: exit $rc: $(tail -c 400 "$tmp/err")"
      if grep -q Traceback "$tmp/err"; then fail "$name: $tool on $input: a traceback"; fi
      if grep -q "ends in the middle of a frame" "$tmp/err"; then
        fail "$name: $tool on $input: a whole log said to be cut"
      fi
      i=$((i + 1))
    done
  done < <(tools)
  python3 - "$tmp/o" "$name" "${forms[@]}" <<'PY' || fail "$name: a form of the log read otherwise"
import json, os, pickle, re, sys
out, name, forms = sys.argv[1], sys.argv[2], sys.argv[3:]
shown = [("<stdin>" if f.startswith("stdin:") else f) for f in forms]
# timings, the date; the settings and pools tune replayed (a file is looked at first: fewer)
VARYING = {"seconds", "events_per_second", "generated", "threads", "pools_replayed",
           "settings_tried"}

def same(value, given):
    """value with the log's name (as given) replaced, the timings dropped."""
    if isinstance(value, dict):
        return {k: same(v, given) for k, v in value.items() if k not in VARYING}
    if isinstance(value, list):
        return [same(v, given) for v in value]
    if isinstance(value, str):        # tune names stdin "-"
        return "LOG" if value == "-" else value.replace(given, "LOG")
    return value

def load(tool, i):
    path = "%s/%s.%s.%d" % (out, name, tool, i)
    data = open(path, "rb").read()
    if tool == "memviz":
        return pickle.loads(data)
    if tool == "cat":
        return data
    if tool == "html":
        text = data.decode()
        return same(json.loads(re.search(r'id="cudapool-data">(.*?)</script>', text,
                                         re.S).group(1)), shown[i])
    text = data.decode()
    if tool == "report":
        return re.sub(r"\d+\.\d+ s\b", "T s", text.replace(shown[i], "LOG"))
    return same(json.loads(text), shown[i])

for tool in ("replay", "tune", "cat", "report", "json", "html", "memviz", "perfetto"):
    want = load(tool, 0)
    for i in range(1, len(forms)):
        got = load(tool, i)
        assert got == want, "%s: %s differs from the plain file's" % (tool, forms[i])
print("%s: the same output of 8 tools from %d forms of the log" % (name, len(forms)))
PY
done

# ---- a compressed log cut in the middle of a frame: read to the cut, said once --------------------
ex="$tmp/example/run.jsonl"
for z in gzip:gz zstd:zst; do
  what=${z%%:*} ext=${z##*:}
  packed="$tmp/example/run.jsonl.$ext"
  size=$(stat -c %s "$packed")
  cut="$tmp/cut.$ext"
  head -c $((size * 2 / 3)) "$packed" >"$cut"
  note="$cut: the $what data ends in the middle of a frame, at byte $((size * 2 / 3)): the log was cut short"
  while read -r tool line; do
    rm -rf "$tmp/o" && mkdir "$tmp/o"
    run "$tool $line" "$cut" "$tmp/o/out"
    [ $rc -eq 0 ] || fail "cut $what: $tool: exit $rc: $(tail -c 400 "$tmp/err")"
    # Said once: on stderr, or where the report says how the log ends (its text; the JSON and
    # the page have it in the ending's text and clues).
    case $tool in
      report) said="$tmp/o/out" ;;
      json | html) said="" ;;
      *) said="$tmp/err" ;;
    esac
    if [ -n "$said" ]; then
      [ "$(grep -cF "$note" "$said")" -eq 1 ] || fail "cut $what: $tool: not said once: $(cat "$said")"
    else
      grep -qF "$note" "$tmp/o/out" || fail "cut $what: $tool: not said"
    fi
  done < <(tools)
  # What was read is the log up to the cut: cudapool-cat's output is a prefix of the log.
  "$bin/cudapool-cat" --quiet "$cut" >"$tmp/prefix" 2>/dev/null
  [ -s "$tmp/prefix" ] && cmp -s "$tmp/prefix" <(head -c "$(stat -c %s "$tmp/prefix")" "$ex") ||
    fail "cut $what: not the log's first bytes"
  # The report says it where it says how the log ends.
  python3 -m cudapool_analysis report --json "$cut" 2>/dev/null | python3 -c '
import json, sys
end = json.load(sys.stdin)["ending"]
assert any("ends in the middle of a frame" in c for c in end["clues"]), end
assert "ends in the middle of a frame" in end["text"], end' || fail "cut $what: not in the report's ending"
done

# ---- corrupt data: named with its byte, exit 1, nothing written ------------------------------------
for z in gzip:gz zstd:zst; do
  what=${z%%:*} ext=${z##*:}
  bad="$tmp/bad.$ext"
  python3 - "$tmp/example/run.jsonl.$ext" "$bad" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 0x5A
open(sys.argv[2], "wb").write(data)
PY
  for input in "$bad" "stdin:$bad"; do
    shown=$bad
    [ "$input" = "stdin:$bad" ] && shown="<stdin>"
    while read -r tool line; do
      rm -rf "$tmp/o" && mkdir "$tmp/o"
      run "$tool $line" "$input" "$tmp/o/out"
      [ $rc -eq 1 ] || fail "corrupt $what ($input): $tool: exit $rc, not 1: $(tail -c 400 "$tmp/err")"
      grep -qE "$shown: corrupt $what data, found (at byte [0-9]+|in bytes [0-9]+ to [0-9]+) \(.*\): the log cannot be read past it" \
        "$tmp/err" || fail "corrupt $what ($input): $tool: $(cat "$tmp/err")"
      if grep -q Traceback "$tmp/err"; then fail "corrupt $what: $tool: a traceback"; fi
      case $tool in
        html | memviz | perfetto) [ -z "$(ls -A "$tmp/o")" ] || fail "corrupt $what: $tool wrote $(ls -A "$tmp/o")" ;;
      esac
    done < <(tools)
  done
done

# ---- formats the readers do not decode: refused with what to do -----------------------------------
printf '\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4\x46' >"$tmp/run.jsonl.xz"
printf 'BZh91AY&SY\x01\x02' >"$tmp/run.jsonl.bz2"
for z in xz:xzcat:xz bzip2:bzcat:bz2; do
  IFS=: read -r what cat ext <<<"$z"
  while read -r tool line; do
    rm -rf "$tmp/o" && mkdir "$tmp/o"
    run "$tool $line" "$tmp/run.jsonl.$ext" "$tmp/o/out"
    [ $rc -eq 1 ] || fail "$what: $tool: exit $rc, not 1"
    has "$tmp/run.jsonl.$ext is compressed with $what, which the readers of the log do not decode (they read plain, gzip and zstd logs): decompress it first ($cat $tmp/run.jsonl.$ext > LOG)" "$tmp/err"
    run "$tool $line" "stdin:$tmp/run.jsonl.$ext" "$tmp/o/out"
    [ $rc -eq 1 ] || fail "$what on stdin: $tool: exit $rc, not 1"
    has "<stdin> is compressed with $what" "$tmp/err"
  done < <(tools)
done
echo "compressed_logs: ok"
