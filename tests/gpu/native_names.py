#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/native_names.py: native frames named at report time on the machine that ran the job
(issue 28: tools/analyze/symbolizer.h, libdw against the libraries' own files, matched by the
log's build ids). Runs bench/torch_models.py gpt2var (2 steps) with its cache off under the shim
with CUDAPOOL_BACKTRACE=all:16, then `cudapool export --memory-viz` of the log as JSON with and
without --no-symbols, and counts the native frames named by a function (and a source line) against
those named library + offset only. Prints PASS/FAIL lines and examples; exit 1 on a failure.

    native_names.py --shim build/shim/libcudapool.so [--python python3] --out DIR
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def frames(path):
    snap = json.load(open(path))
    out = []
    for seg in snap["segments"]:
        for b in seg["blocks"]:
            out += [f for f in b.get("frames") or [] if not f["filename"].endswith(".py")]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    log = os.path.join(a.out, "gpt2var-all16.jsonl")
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(a.shim), CUDAPOOL_LOG=log,
               CUDAPOOL_BACKTRACE="all:16", PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    subprocess.run([a.python, os.path.join(REPO, "bench/torch_models.py"), "--model", "gpt2var",
                    "--steps", "2", "--warmup", "1"], env=env, check=True, stdout=subprocess.DEVNULL)
    tool = [a.python, "-m", "cudapool_analysis"]
    penv = dict(os.environ, PYTHONPATH=os.path.join(REPO, "scripts"))
    failed = 0
    got = {}
    for name, extra in (("named", []), ("plain", ["--no-symbols"])):
        out = os.path.join(a.out, "memviz-%s.json" % name)
        subprocess.run(tool + ["export", "--quiet", "--memory-viz", out] + extra + [log],
                       env=penv, check=True)
        got[name] = frames(out)
    if len(got["named"]) != len(got["plain"]):
        print("FAIL native_names: %d frames named, %d plain" % (len(got["named"]), len(got["plain"])))
        return 1
    named = [f for f, p in zip(got["named"], got["plain"]) if f["name"] != p["name"]]
    lines = [f for f in named if f["line"] > 0]
    print("native frames: %d; named by a function (unlike --no-symbols): %d; with a source line: %d"
          % (len(got["named"]), len(named), len(lines)))
    seen = set()
    for f in named:
        key = (f["name"], f["filename"])
        if key not in seen and len(seen) < 12:
            seen.add(key)
            print("  %s  (%s:%d)" % (f["name"][:120], f["filename"][-60:], f["line"]))
    ok = len(named) > 0 and len(named) >= len(got["named"]) // 2
    print("%s native_names: %d of %d native frames named by a function" % (
        "PASS" if ok else "FAIL", len(named), len(got["named"])))
    failed |= not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
