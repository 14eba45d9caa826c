#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fakecuda/python_stacks.sh: CUDAPOOL_BACKTRACE=python through the fake driver, from a Python
# program (python/stacks_program.py) whose threads call with the GIL released and held: every
# alloc event of a Python thread names a Python stack whose frames are the program's own lines
# (alloc, Model.forward, worker / <module>), each definition line comes before its first use and
# once; the summary counts the stacks; all:N records both kinds; a fork child and daemon threads
# allocating through the interpreter's exit neither hang nor crash (run many times, bounded by
# timeout); a process without Python counts its allocations as not_running; a bad value warns.
# Usage: python_stacks.sh <cudart_like> <libcudapool.so> <directory of the fake libcuda.so.1>
source "$(dirname "${BASH_SOURCE[0]}")/script_harness.sh"
here=$(dirname "${BASH_SOURCE[0]}")
prog="$here/python/stacks_program.py"
# python3 as the host: LeakSanitizer off (Debian's python3 leaks at exit by itself).
asan="${ASAN_OPTIONS:-}:detect_leaks=0"

run_py() {  # log backtrace args...
  local log=$1 bt=$2
  shift 2
  LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" ASAN_OPTIONS="$asan" CUDAPOOL_LOG="$log" \
    CUDAPOOL_BACKTRACE="$bt" timeout 60 python3 "$prog" "$@" >"$work/out" 2>"$work/err"
}

check() {  # log mode(python|all) allocs_expected
  python3 - "$@" "$(sed -n 's/^alloc_line //p' "$work/out")" <<'PY'
import json, sys
path, mode, expected, alloc_line = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
frames, stacks, allocs, summary = {}, {}, [], None
for n, text in enumerate(open(path), 1):
    line = json.loads(text)
    action = line.get("action")
    if action == "python_frame":
        assert line["id"] not in frames, "frame %d defined twice" % line["id"]
        assert line["id"] == len(frames) + 1, "frame ids not in order of first use"
        frames[line["id"]] = (line["file"], line["line"], line["function"])
    elif action == "python_stack":
        assert line["id"] not in stacks, "stack %d defined twice" % line["id"]
        assert line["id"] == len(stacks) + 1, "stack ids not in order of first use"
        assert all(f in frames for f in line["frames"]), "stack %d before its frames" % line["id"]
        stacks[line["id"]] = line["frames"]
    elif action == "alloc":
        assert "python_stack" in line, "alloc without a Python stack: line %d" % n
        assert line["python_stack"] in stacks, "line %d names a stack not yet defined" % n
        if mode == "all":
            assert len(line.get("backtrace", [])) == 4, "all:4: no native frames on line %d" % n
        else:
            assert "backtrace" not in line, "python: native frames on line %d" % n
        allocs.append([frames[f] for f in stacks[line["python_stack"]]])
    elif action == "summary":
        summary = line
assert len(allocs) == expected, (len(allocs), expected)
for stack in allocs:
    file, line, function = stack[0]
    assert file.endswith("stacks_program.py") and line == alloc_line and function == "alloc", stack[0]
    names = [f[2] for f in stack]
    assert names[:3] == ["alloc", "Model.forward", "worker"] or names == ["alloc", "<module>"], names
threads = sum(1 for s in allocs if s[1][2] == "Model.forward")
assert threads == expected - 1, threads
py = summary["python_stacks"]
assert py["taken"] == expected and py["no_thread_state"] == 0 and py["no_frames"] == 0, py
assert py["failed"] == 0 and py["not_running"] == 0, py
print("stacks ok: %d allocs, %d stacks, %d frames" % (len(allocs), len(stacks), len(frames)))
PY
}

run_py "$work/py.jsonl" python 50 || fail "python run: exit $?: $(tail -n 5 "$work/err")"
check "$work/py.jsonl" python $((4 * 50 + 1)) || fail "python stacks wrong"
run_py "$work/all.jsonl" all:4 20 || fail "all:4 run: exit $?: $(tail -n 5 "$work/err")"
check "$work/all.jsonl" all $((4 * 20 + 1)) || fail "all:4 stacks wrong"

# Many runs with a fork child and daemon threads allocating while the interpreter exits: no hang
# (timeout 60 each), no crash, a summary line each time. Not the daemon threads under TSan: there a
# daemon thread that Python ends with pthread_exit while it waits for the GIL in the hook
# (finalization) is force-unwound through a frame of the TSan-instrumented shim that has a
# cleanup, and the shim's static unwinder aborts (SIGABRT in _Unwind_SetGR, 1 run in about 12).
# The plain and ASan builds have no cleanup on that path (docs/shim.md); known, not yet mended.
extra=daemons
case "$shim" in *libtsan*) extra="" ;; esac
for i in $(seq 1 "${PYTHON_STACKS_RUNS:-12}"); do
  rm -f "$work/f.jsonl"
  run_py "$work/f.jsonl" python 30 fork $extra || { fail "run $i with fork and daemons: exit $?: $(tail -n 5 "$work/err")"; break; }
  grep -q '"action":"summary"' "$work/f.jsonl" || { fail "run $i: no summary line"; break; }
  [ ! -s "$work/err" ] || { fail "run $i: stderr: $(head -n 5 "$work/err")"; break; }
done

# No Python in the process: nothing taken, every allocation counted not_running, no stack fields.
LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" CUDAPOOL_LOG="$work/c.jsonl" CUDAPOOL_BACKTRACE=python \
  "$program" cache_hit shim >"$work/out" 2>"$work/err" || fail "cudart_like: exit $?: $(tail -n 3 "$work/err")"
python3 - "$work/c.jsonl" <<'PY' || fail "no-Python process: wrong counts"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
allocs = sum(1 for l in lines if l.get("action") == "alloc")
assert not any("python_stack" in l or l.get("action", "").startswith("python_") for l in lines)
py = lines[-1]["python_stacks"]
assert allocs > 0 and py["taken"] == 0 and py["not_running"] == allocs, (allocs, py)
PY

# A bad value: one warning naming the grammar, and nothing recorded.
LD_LIBRARY_PATH="$fake_dir" LD_PRELOAD="$shim" CUDAPOOL_LOG="$work/b.jsonl" CUDAPOOL_BACKTRACE=python:0 \
  "$program" cache_hit shim >"$work/out" 2>"$work/err" || fail "bad value run: exit $?"
grep -q "CUDAPOOL_BACKTRACE=python:0: accepted: N or native:N" "$work/err" || fail "no warning: $(cat "$work/err")"
! grep -q python_stack "$work/b.jsonl" || fail "python:0 recorded stacks"
[ "$status" -eq 0 ] && echo "python_stacks: ok"
exit "$status"
