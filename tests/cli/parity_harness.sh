#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/parity_harness.sh: tests/parity/run_parity.py takes anyone's cases: with --cases-file F
# it passes F on to the PyTorch side (here a stand-in for tests/parity/torch_replay.py that answers
# with the replay's own numbers, so the case must come out equal), and a trace named relative to
# F is found beside F. Before, the PyTorch side always read tests/parity/cases.json and every case
# of another file failed with "no case ... in cases.json".
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$tmp/mine/traces"
cp "$src/tests/parity/traces/best_fit.jsonl" "$tmp/mine/traces/t.jsonl"
cat >"$tmp/mine/cases.json" <<'JSON'
{"cases": [{"name": "someone_elses", "trace": "traces/t.jsonl", "conf": "", "fraction": null}]}
JSON
cat >"$tmp/fake_torch.py" <<'PY'
import json, os, subprocess, sys
sys.path.insert(0, sys.argv[1])
from parity_paths import resolve_trace
args = sys.argv[2:]
if "--build-only" in args:
    print(json.dumps({"built": True}))
    sys.exit(0)
if "--cases" not in args:
    sys.exit("no --cases given: the harness would read tests/parity/cases.json")
cases_file = args[args.index("--cases") + 1]
name = [a for a in args if not a.startswith("--") and a != cases_file][0]
case = {c["name"]: c for c in json.load(open(cases_file))["cases"]}.get(name)
if case is None:
    sys.exit("no case %s in %s" % (name, cases_file))
trace = resolve_trace(case["trace"], cases_file)
rep = json.loads(subprocess.run([os.environ["CUDAPOOL_BUILD_DIR"] + "/tools/cudapool-replay",
                                 "--json", "--device-memory", "150000000000", trace],
                                capture_output=True, text=True, check=True).stdout)
print(json.dumps({"case": name, "trace": case["trace"], "total_memory": 150000000000,
                  "stats": rep["stats"], "failed_allocs": 0, "segment_trace": []}))
PY
TORCH_REPLAY_CMD="python3 $tmp/fake_torch.py $src/tests/parity" \
  python3 "$src/tests/parity/run_parity.py" --cases-file "$tmp/mine/cases.json" --out "$tmp/out" \
  >"$tmp/run.txt" 2>&1 || fail "run_parity failed: $(tail -n 20 "$tmp/run.txt")"
grep -q "parity: 1 cases, 1 equal, 0 differ" "$tmp/run.txt" || fail "not equal: $(tail -n 20 "$tmp/run.txt")"
echo "parity_harness: ok"
