#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/oom_snapshot.py: CUDAPOOL_OOM_SNAPSHOT on the GPU, read by PyTorch's own viewer code.

A child process (this file with --child) runs PyTorch with its cache off
(PYTORCH_NO_CUDA_MEMORY_CACHING=1, so every tensor is a cudaMalloc the shim serves) under
LD_PRELOAD=<libcudapool.so>, CUDAPOOL_BACKTRACE=python and CUDAPOOL_OOM_SNAPSHOT=DIR/oom-%p.pickle,
with the pool capped (CUDAPOOL_CONF=per_process_memory_fraction:F, so the device fills fast): it
allocates 256 MiB tensors in a function of its own until the out-of-memory error (with PyTorch's
cache off, torch.AcceleratorError "CUDA error: out of memory", as tests/gpu/split_piece.py sees it;
torch.OutOfMemoryError is caught too), catches it, frees half, checks that CUDA still works, then
asks for far too much once more (a second out-of-memory).
Twice: without a log (the shim's own table of Python stacks) and with CUDAPOOL_LOG (the log's
table; the figures are then compared with the log's first oom event). Checks, one PASS or FAIL
line each (exit status 1 on any FAIL):

  - child: exit 0, the out-of-memory error caught, CUDA usable afterwards, the second one caught;
  - file: exactly one, DIR/oom-<child pid>.pickle, mode 0600, no temporary left; one line on the
    child's stderr naming it; not rewritten by the second OOM (its oom entry is the first's size);
  - schema: plain pickle (protocol 2, no class), the four top-level keys, segments' blocks cover
    them in address order, totals match the blocks; at least `kept` allocated blocks of 256 MiB;
  - frames: a frame of each 256 MiB block (the innermost, with torch.empty in C++), and of the oom
    entry, is this file's own line in grab() ({filename, line, name} as PyTorch records a Python
    frame);
  - log (second run): the snapshot's reserved and allocated bytes equal the log's first oom event's;
  - viewers: torch.cuda._memory_viz's segment_plot, trace_plot, segsum and trace (PyTorch 2.11's
    own code, the functions behind pytorch.org/memory_viz's file and `python -m
    torch.cuda._memory_viz`) accept the snapshot, and `python -m torch.cuda._memory_viz
    trace_plot FILE -o OUT.html` (the command the shim prints) exits 0 with a page.

Usage (on the GPU machine, from the repository root, torch 2.11 installed):
    python3 tests/gpu/oom_snapshot.py --shim build/shim/libcudapool.so [--fraction 0.05]
        [--python python3] [--keep DIR]
or GPU_TESTS_ONLY=oom_snapshot tests/gpu/run.sh. The parent does not touch CUDA.
"""
import argparse
import glob
import io
import json
import os
import pickle
import stat
import subprocess
import sys
import tempfile

MiB = 1 << 20
CHUNK = 256 * MiB
RESULTS = []


def result(ok, what):
    RESULTS.append(ok)
    print("%s %s" % ("PASS" if ok else "FAIL", what), flush=True)


# --- the child: PyTorch until out-of-memory --------------------------------------------------

def grab(torch):
    return torch.empty(CHUNK, dtype=torch.uint8, device="cuda")  # the frame the snapshot names


GRAB_LINE = grab.__code__.co_firstlineno + 1


def child():
    import torch
    kept = []
    try:
        while len(kept) < 100000:
            kept.append(grab(torch))
        print("no oom", flush=True)
        return 1
    except RuntimeError as e:  # torch.AcceleratorError (cache off), torch.OutOfMemoryError
        if "out of memory" not in str(e):
            raise
        print("oom caught after %d tensors: %s: %s" % (
            len(kept), type(e).__name__, str(e).splitlines()[0][:200]), flush=True)
    print("grab_line %d" % GRAB_LINE, flush=True)
    print("kept %d" % len(kept), flush=True)
    del kept[len(kept) // 2:]
    x = torch.ones(1000, device="cuda")
    print("usable %s" % (x.sum().item() == 1000.0), flush=True)
    try:
        torch.empty(1 << 46, dtype=torch.uint8, device="cuda")
        print("second: no oom", flush=True)
    except RuntimeError as e:
        print("second %s" % ("oom caught" if "out of memory" in str(e) else "error: %s" % e),
              flush=True)
    return 0


# --- the parent: the checks ------------------------------------------------------------------

def plain_load(path):
    class Plain(pickle.Unpickler):
        def find_class(self, module, name):
            raise pickle.UnpicklingError("the pickle names a class: %s.%s" % (module, name))
    data = open(path, "rb").read()
    return data, Plain(io.BytesIO(data)).load()


def check_schema(tag, snap, kept):
    ok, why = True, []
    if sorted(snap) != ["allocator_settings", "device_traces", "external_annotations",
                        "segments"]:
        return False, "top-level keys %s" % sorted(snap)
    allocated_chunks = 0
    for s in snap["segments"]:
        addr = s["address"]
        allocated = sum(b["size"] for b in s["blocks"] if b["state"] == "active_allocated")
        if allocated != s["allocated_size"]:
            ok = False
            why.append("segment 0x%x: allocated_size %d, blocks %d" % (addr, s["allocated_size"],
                                                                      allocated))
        for b in s["blocks"]:
            if b["address"] != addr or b["size"] <= 0:
                ok = False
                why.append("segment 0x%x: a block at 0x%x, expected 0x%x" % (s["address"],
                                                                            b["address"], addr))
            addr += b["size"]
            if b["state"] == "active_allocated" and b["requested_size"] == CHUNK:
                allocated_chunks += 1
        if addr != s["address"] + s["total_size"]:
            ok = False
            why.append("segment 0x%x: blocks cover %d of %d" % (s["address"], addr - s["address"],
                                                               s["total_size"]))
    if allocated_chunks < kept:
        ok = False
        why.append("%d allocated blocks of 256 MiB, the program held %d" % (allocated_chunks, kept))
    return ok, "; ".join(why[:4]) or "%d segments, %d blocks of 256 MiB" % (
        len(snap["segments"]), allocated_chunks)


def names_grab(frames):
    """Whether a frame is this file's line in grab() (the innermost one with PyTorch's C++
    torch.empty; any, should a Python wrapper of torch's come first)."""
    return any(f.get("name") == "grab" and f.get("line") == GRAB_LINE and
               str(f.get("filename", "")).endswith("oom_snapshot.py") for f in frames)


def check_viewers(tag, snap, path, args, work):
    try:
        from torch.cuda import _memory_viz as mv
    except Exception as e:  # noqa: BLE001: any failure to import is the finding
        result(False, "%s viewers: cannot import torch.cuda._memory_viz: %s" % (tag, e))
        return
    for name in ("segment_plot", "trace_plot", "segsum", "trace"):
        try:
            out = getattr(mv, name)(snap)
            result(isinstance(out, str) and len(out) > 0,
                   "%s viewers: _memory_viz.%s accepts it (%d characters)" % (
                       tag, name, len(out) if isinstance(out, str) else -1))
        except Exception as e:  # noqa: BLE001
            result(False, "%s viewers: _memory_viz.%s raised %s: %s" % (
                tag, name, type(e).__name__, e))
    html = os.path.join(work, "%s-trace.html" % tag)
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    r = subprocess.run([args.python, "-m", "torch.cuda._memory_viz", "trace_plot", path, "-o",
                        html], env=env, capture_output=True, text=True, timeout=300)
    result(r.returncode == 0 and os.path.getsize(html) > 1000 if os.path.exists(html) else False,
           "%s viewers: python -m torch.cuda._memory_viz trace_plot exit %d, %s" % (
               tag, r.returncode, html if os.path.exists(html) else
               "no page: " + (r.stderr.strip().splitlines() or [""])[-1][:200]))


def run_variant(tag, args, work, with_log):
    snaps = os.path.join(work, tag)
    os.makedirs(snaps)
    env = dict(os.environ)
    env.update({"LD_PRELOAD": os.path.abspath(args.shim), "PYTORCH_NO_CUDA_MEMORY_CACHING": "1",
                "CUDAPOOL_BACKTRACE": "python",
                "CUDAPOOL_CONF": "per_process_memory_fraction:%s" % args.fraction,
                "CUDAPOOL_OOM_SNAPSHOT": os.path.join(snaps, "oom-%p.pickle")})
    for k in ("CUDAPOOL_LOG", "CUDAPOOL_SUMMARY", "CUDAPOOL_DISABLE", "CUDAPOOL_LOG_LEVEL"):
        env.pop(k, None)
    log = os.path.join(work, tag + ".jsonl")
    if with_log:
        env["CUDAPOOL_LOG"] = log
    p = subprocess.Popen([args.python, os.path.abspath(__file__), "--child"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=600)
    for line in (out + err).splitlines():
        print("    | %s" % line[:300])
    lines = dict(l.split(" ", 1) for l in out.splitlines() if " " in l)
    kept = int(lines.get("kept", "0"))
    result(p.returncode == 0 and "oom" in lines and lines.get("usable") == "True" and
           "second" in lines and lines["second"] == "oom caught",
           "%s child: exit %d, the out-of-memory error caught after %d tensors, CUDA usable, a "
           "second one caught" % (tag, p.returncode, kept))
    files = sorted(os.listdir(snaps))
    want = "oom-%d.pickle" % p.pid
    if not result_ok(files == [want], "%s file: %s (want [%s])" % (tag, files, want)):
        return
    path = os.path.join(snaps, want)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    said = [l for l in err.splitlines() if "out-of-memory snapshot written to " + path in l]
    result(mode == 0o600 and len(said) == 1,
           "%s file: mode %o, %d line(s) naming it on stderr" % (tag, mode, len(said)))
    try:
        data, snap = plain_load(path)
    except Exception as e:  # noqa: BLE001
        result(False, "%s schema: the pickle does not load: %s" % (tag, e))
        return
    ok, what = check_schema(tag, snap, kept)
    result(ok and data[:2] == b"\x80\x02", "%s schema: %s" % (tag, what))
    traces = [e for t in snap["device_traces"] for e in t]
    oom = traces[0] if len(traces) == 1 and traces[0]["action"] == "oom" else None
    result(oom is not None and oom["size"] == CHUNK and "device_free" in oom,
           "%s oom entry: %s (one, of 256 MiB: the first OOM's, not rewritten by the second)" % (
               tag, {k: v for k, v in (oom or {}).items() if k != "frames"} or traces[:2]))
    blocks = [b for s in snap["segments"] for b in s["blocks"] if b["state"] != "inactive"]
    named = sum(names_grab(b["frames"]) for b in blocks)
    result(named >= kept > 0 and oom is not None and names_grab(oom["frames"]),
           "%s frames: %d blocks and the oom entry name oom_snapshot.py:%d grab (first frame of "
           "one block: %s)" % (tag, named, GRAB_LINE,
                               next((b["frames"][:1] for b in blocks if b["frames"]), None)))
    if with_log:
        events = [json.loads(l) for l in open(log)]
        ooms = [e for e in events if e.get("action") == "oom"]
        reserved = sum(s["total_size"] for s in snap["segments"])
        allocated = sum(s["allocated_size"] for s in snap["segments"])
        result(bool(ooms) and ooms[0]["reserved"] == reserved and
               ooms[0]["allocated"] == allocated,
               "%s log: snapshot reserved %d, allocated %d; the log's first oom event %s" % (
                   tag, reserved, allocated,
                   {k: ooms[0].get(k) for k in ("reserved", "allocated", "cause")} if ooms
                   else "missing"))
    check_viewers(tag, snap, path, args, work)


def result_ok(ok, what):
    result(ok, what)
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--shim", default="build/shim/libcudapool.so")
    ap.add_argument("--fraction", default="0.05",
                    help="per_process_memory_fraction of the pool (default 0.05: about 7 GiB "
                         "of an H200)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--keep", help="a directory to keep the snapshots and logs in")
    args = ap.parse_args()
    if args.child:
        return child()
    if not os.path.exists(args.shim):
        result(False, "setup: %s does not exist (build it, or give --shim)" % args.shim)
        return 1
    work = args.keep or tempfile.mkdtemp(prefix="cudapool-oom-snapshot-")
    os.makedirs(work, exist_ok=True)
    run_variant("nolog", args, work, with_log=False)
    run_variant("log", args, work, with_log=True)
    left = glob.glob(os.path.join(work, "*", "*.tmp.*"))
    result(not left, "temporaries left: %s" % (left or "none"))
    print("oom_snapshot: %d passed, %d failed (files in %s)" % (
        RESULTS.count(True), RESULTS.count(False), work), flush=True)
    return 0 if all(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
