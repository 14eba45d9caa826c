#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/replay_tool.sh: cudapool-replay and `scripts/cudapool replay` as a user runs them; how
# the Python package finds the tools (tools.py: $CUDAPOOL_REPLAY / $CUDAPOOL_TUNE, the build tree).
set -euo pipefail
bin="$CUDAPOOL_BUILD_DIR/tools/cudapool-replay"
src="$CUDAPOOL_SOURCE_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

log="$src/examples/logs/training-loop.jsonl"
"$bin" "$log" >"$tmp/out.txt" || fail "text replay exited $?"
grep -q "cudapool memory summary, device ID 0" "$tmp/out.txt" || fail "no summary table"
grep -q "GPU reserved memory" "$tmp/out.txt" || fail "no reserved row"

"$bin" --json "$log" >"$tmp/out.json" || fail "json replay exited $?"
python3 - "$tmp/out.json" <<'PY' || fail "json output wrong"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "cudapool.replay/1"
assert d["stats"]["allocated_bytes.all.current"] == 0, d["stats"]["allocated_bytes.all.current"]
assert d["stats"]["allocated_bytes.all.peak"] > 0
assert d["counts"]["malformed_lines"] == 0 and d["unknown_frees"] == 0
PY

# stdin, and the same numbers as from the file
"$bin" --json - <"$log" >"$tmp/stdin.json"
python3 -c "import json,sys; a=json.load(open(sys.argv[1])); b=json.load(open(sys.argv[2])); assert a['stats']==b['stats']" \
  "$tmp/out.json" "$tmp/stdin.json" || fail "stdin replay differs"

# --conf and --device-memory
"$bin" --json --conf 'max_split_size_mb:64' --device-memory 1G "$log" >"$tmp/conf.json"
python3 - "$tmp/conf.json" <<'PY' || fail "--conf/--device-memory not applied"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stats"]["max_split_size"] == 64 << 20
assert d["devices"]["0"]["device_memory"] == 1 << 30
assert d["conf_origin"] == "--conf"
PY

# a bad conf pair: reported on stderr, replay goes on
"$bin" --conf 'max_split_size_mb:3' "$log" >/dev/null 2>"$tmp/err.txt" || fail "bad conf stopped replay"
grep -q "max_split_size_mb" "$tmp/err.txt" || fail "bad conf pair not reported"

# garbage input: counted with line numbers, exit 0
printf 'garbage\n{"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"free_requested","ptr":"0x5","size":1}\n' >"$tmp/bad.jsonl"
"$bin" "$tmp/bad.jsonl" >"$tmp/bad.txt" || fail "garbage input made replay fail"
grep -q "line 1: malformed" "$tmp/bad.txt" || fail "malformed line not located"
grep -q "line 2: free of 0x5" "$tmp/bad.txt" || fail "unknown free not located"

# usage errors
set +e
"$bin" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no LOG should exit 2"
"$bin" --device-memory lots "$log" >/dev/null 2>&1; [ $? -eq 2 ] || fail "bad size should exit 2"
"$bin" "$tmp/does-not-exist" >/dev/null 2>&1; [ $? -eq 1 ] || fail "missing file should exit 1"
set -e

# the launcher finds the built tool
CUDAPOOL_BUILD_DIR="$CUDAPOOL_BUILD_DIR" "$src/scripts/cudapool" replay --json "$log" >"$tmp/l.json" ||
  fail "scripts/cudapool replay failed"

# the Python package's one finder of the tools (scripts/cudapool_analysis/tools.py): the override
# first, one that is not a file passed over, then $CUDAPOOL_BUILD_DIR/tools; a missing tool an error
printf '#!/bin/sh\n' >"$tmp/my-tool" && chmod +x "$tmp/my-tool"
PYTHONPATH="$src/scripts" python3 - "$tmp" <<'PY' || fail "the package's tool finder"
import os, sys
from cudapool_analysis import tools
tmp, build = sys.argv[1], os.environ["CUDAPOOL_BUILD_DIR"]
for name, var in (("cudapool-replay", "CUDAPOOL_REPLAY"), ("cudapool-tune", "CUDAPOOL_TUNE")):
    os.environ[var] = tmp + "/my-tool"
    assert tools.tool_command(name) == [tmp + "/my-tool"], tools.tool_command(name)
    os.environ[var] = tmp + "/missing"
    got = tools.find_tool(name)
    assert got == os.path.normpath(os.path.join(build, "tools", name)), got
try:
    tools.tool_command("cudapool-nothing")
    raise AssertionError("a missing tool was found")
except tools.ToolError as e:
    assert "cudapool-nothing not found" in str(e) and "scripts/cudapool build" in str(e), e
PY
echo "replay_tool: ok"
