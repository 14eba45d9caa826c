#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/replay_report_agree.sh: cudapool-replay and `cudapool report` call the same lines
# malformed (issue 18, defect 10): one definition of a valid line (docs/log-format.md, "Valid
# lines"), checked on the rules fixtures (tests/cli/fixtures/line_rules.py: every line's verdict is
# given; line_rules_python.jsonl: the definition lines of Python stacks, whose second definitions
# of an id both list), on every other fixture, on lines at and over the line limit and on a byte
# order mark (issue 26). Not here: what either
# tool does with the valid lines (replay_tool.sh, report_tool.sh).
set -euo pipefail
bin="$CUDAPOOL_BUILD_DIR/tools/cudapool-replay"
src="$CUDAPOOL_SOURCE_DIR"
fx="$src/tests/cli/fixtures"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# The checked-in fixture is what its generator writes.
python3 "$fx/line_rules.py" "$tmp"
cmp -s "$tmp/line_rules.jsonl" "$fx/line_rules.jsonl" ||
  fail "tests/cli/fixtures/line_rules.jsonl is stale: run python3 tests/cli/fixtures/line_rules.py"
cmp -s "$tmp/line_rules.expected" "$fx/line_rules.expected" ||
  fail "tests/cli/fixtures/line_rules.expected is stale: run python3 tests/cli/fixtures/line_rules.py"
for f in line_rules_python.jsonl line_rules_python.expected; do
  cmp -s "$tmp/$f" "$fx/$f" ||
    fail "tests/cli/fixtures/$f is stale: run python3 tests/cli/fixtures/line_rules.py"
done

# Lines at and over the limit (64 MiB, the newline not counted): a valid event padded to exactly
# the limit, then one byte more; a last line without its newline over the limit.
python3 - "$tmp/long.jsonl" <<'PY'
import sys
limit = 64 << 20
head = b'{"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"alloc","ptr":"0x10","size":64,"pad":"'
def padded(n):
    return head + b"x" * (n - len(head) - 2) + b'"}'
with open(sys.argv[1], "wb") as f:
    f.write(b'{"schema":"cudapool.log/1","conf":"","devices":[]}\n')
    f.write(padded(limit) + b"\n")        # line 2: exactly the limit: valid
    f.write(padded(limit + 1) + b"\n")    # line 3: one byte over: malformed
    f.write(b'{"seq":2,"t_ns":2,"tid":1,"dev":0,"action":"free_requested","ptr":"0x10","size":0}\n')
    f.write(b" " * (limit + 1))           # line 5: white space, over the limit, no newline
PY
printf '3\n5\n' >"$tmp/long.expected"
# A UTF-8 byte order mark before the header is taken by both (issue 26); before a later line it
# is not white space: that line is malformed.
bom=$'\xef\xbb\xbf'
{ printf '%s' "$bom"; head -n 3 "$fx/normal.jsonl"; printf '%s' "$bom"; sed -n 4p "$fx/normal.jsonl"; } \
  >"$tmp/bom.jsonl"
printf '4\n' >"$tmp/bom.expected"

python3 - "$bin" "$src" "$tmp" "$fx" <<'PY' || fail "the readers disagree"
import glob, json, os, subprocess, sys
binary, src, tmp, fx = sys.argv[1:]
env = dict(os.environ, PYTHONPATH=os.path.join(src, "scripts"))

def replay_malformed(path):
    out = subprocess.run([binary, "--json", path], capture_output=True, check=True).stdout
    d = json.loads(out)
    lines = [p["line"] for p in d["problems"] if p["what"].startswith("malformed line")]
    assert len(lines) == d["counts"]["malformed_lines"] < 100, (path, "replay lists", len(lines))
    return lines

def report_malformed(path):
    out = subprocess.run([sys.executable, "-m", "cudapool_analysis", "report", "--json", path],
                         capture_output=True, check=True, env=env).stdout
    d = json.loads(out)
    lines = [p["line"] for p in d["problems"] if p["what"].startswith("malformed")]
    assert len(lines) == d["malformed_lines"] and d["problem_count"] < 100, (path, len(lines))
    return lines

def expected(path):
    with open(path) as f:
        return [int(l.split()[0]) for l in f if l.strip() and not l.startswith("#")]

checks = [(os.path.join(fx, "line_rules.jsonl"), expected(os.path.join(fx, "line_rules.expected"))),
          (os.path.join(fx, "line_rules_python.jsonl"),
           expected(os.path.join(fx, "line_rules_python.expected"))),
          (os.path.join(tmp, "long.jsonl"), expected(os.path.join(tmp, "long.expected"))),
          (os.path.join(tmp, "bom.jsonl"), expected(os.path.join(tmp, "bom.expected")))]
checks += [(p, None) for p in sorted(glob.glob(os.path.join(fx, "*.jsonl")))
           if not os.path.basename(p).startswith("line_rules")]
bad = False
for path, want in checks:
    a, b = replay_malformed(path), report_malformed(path)
    name = os.path.basename(path)
    if a != b:
        print("%s: the replay calls lines %s malformed, the report lines %s" % (name, a, b))
        print("  only the replay: %s; only the report: %s"
              % (sorted(set(a) - set(b)), sorted(set(b) - set(a))))
        bad = True
    if want is not None and a != want:
        print("%s: malformed lines %s, the fixture says %s" % (name, a, want))
        print("  missed: %s; not malformed: %s" % (sorted(set(want) - set(a)), sorted(set(a) - set(want))))
        bad = True
    if not bad:
        print("%s: both call %d line(s) malformed" % (name, len(a)))
# A second definition of a Python frame's or stack's id: listed by both, in the same words.
rules = os.path.join(fx, "line_rules_python.jsonl")
replay = json.loads(subprocess.run([binary, "--json", rules], capture_output=True,
                                   check=True).stdout)
report = json.loads(subprocess.run([sys.executable, "-m", "cudapool_analysis", "report", "--json",
                                    rules], capture_output=True, check=True, env=env).stdout)
def second(d):
    return [(p["line"], p["what"]) for p in d["problems"] if p["what"].startswith("a second")]


want = [(8, "a second python_frame 1: ignored"), (9, "a second python_stack 1: ignored")]
if second(replay) != want or second(report) != want:
    print("second definitions: the replay lists %s, the report %s, expected %s"
          % (second(replay), second(report), want))
    bad = True
sys.exit(1 if bad else 0)
PY
echo "replay_report_agree: ok"
