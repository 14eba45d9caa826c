#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/parity/predict_check.py: how many parity cases a replay with simulated device addresses
predicts as PyTorch ran them: peak reserved and allocated (MiB, one decimal), device allocations
and frees, OOMs and retries, against PyTorch 2.11's numbers on an H200 (torch_reference.json,
from the parity run of 2026-11-29). The replay gets no addresses from PyTorch here, so its
segments go where the placement model (pool/placement.h) puts them.

    predict_check.py REPLAY [--min N] [--verbose]

Prints "predicted N of M"; exit 1 when N < --min."""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from parity_paths import resolve_trace  # noqa: E402

TOTAL = 150109880320


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("replay")
    ap.add_argument("--min", type=int, default=0)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    ref = json.load(open(os.path.join(HERE, "torch_reference.json")))["cases"]
    cases_file = os.path.join(HERE, "cases.json")
    cases = {c["name"]: c for c in json.load(open(cases_file))["cases"]}
    good = 0
    for name, t in sorted(ref.items()):
        c = cases[name]
        conf = c.get("conf") or ""
        if c.get("fraction") is not None:
            conf = (conf + "," if conf else "") + "per_process_memory_fraction:%s" % c["fraction"]
        out = subprocess.run([args.replay, "--json", "--no-log-addresses", "--conf", conf,
                              "--device-memory", str(TOTAL), resolve_trace(c["trace"], cases_file)],
                             capture_output=True, text=True, check=True)
        s = json.loads(out.stdout)["stats"]
        got = {"reserved": round(s["reserved_bytes.all.peak"] / 2**20, 1),
               "allocated": round(s["allocated_bytes.all.peak"] / 2**20, 1),
               "allocs": s["num_device_alloc"], "frees": s["num_device_free"],
               "ooms": s["num_ooms"], "retries": s["num_alloc_retries"]}
        diff = {k: (t[k], got[k]) for k in got if abs(got[k] - t[k]) >= 0.11}
        good += not diff
        if diff and args.verbose:
            print("  %s: (torch, predicted) %s" % (name, diff))
    print("predicted %d of %d" % (good, len(ref)))
    return 0 if good >= args.min else 1


if __name__ == "__main__":
    sys.exit(main())
