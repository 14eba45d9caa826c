#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/control_cli.py: the live commands as a user types them (`cudapool stats`, `top`), on
the GPU, against what nvidia-smi shows.

A child (this file with --child) runs PyTorch with its cache off under LD_PRELOAD=<libcudapool.so>
and CUDAPOOL_CONTROL=1; it waits 3 s before its first CUDA call (so its socket does not exist yet
when the parent first asks), then allocates 8 tensors of 256 MiB, says it is ready and waits.
Checks, one PASS or FAIL line each (exit status 1 on any FAIL):

  - wait: `stats PID --timeout 60 --json`, asked at once, waits for the socket and answers (exit 0);
  - top: `top --once --json` lists the child, with at least 2 GiB reserved on its device;
  - driver: top's driver_used_bytes for the child equals nvidia-smi's used_memory for its pid
    (--query-compute-apps, MiB) within 1 MiB; where nvidia-smi lists no process (a container that
    hides them) the figure must be n/a (null), and an INFO line says so;
  - csv: `stats PID --csv` has top's column names and the same reserved bytes;
  - no process: `stats 999999` exits 1 and says "no process".

Usage (on the GPU machine, from the repository root, torch installed):
    python3 tests/gpu/control_cli.py --shim build/shim/libcudapool.so [--python python3]
The parent does not touch CUDA; it runs the package as `python3 -m cudapool_analysis`.
"""
import argparse
import csv
import io
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPTS = os.path.join(HERE, "..", "..", "scripts")
MIB = 1 << 20
failures = 0


def check(name, ok, detail):
    global failures
    print("%s %s %s" % ("PASS" if ok else "FAIL", name, detail), flush=True)
    failures += 0 if ok else 1


def child(ready):
    time.sleep(3)
    import torch
    xs = [torch.empty(256 * MIB, dtype=torch.uint8, device="cuda") for _ in range(8)]
    torch.cuda.synchronize()
    open(ready, "w").close()
    while not os.path.exists(ready + ".go"):
        time.sleep(0.05)
    del xs
    return 0


def cudapool(python, *args, timeout=120):
    env = dict(os.environ, PYTHONPATH=SCRIPTS)
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([python, "-m", "cudapool_analysis"] + list(args), capture_output=True,
                       text=True, env=env, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def smi_used(pid):
    """nvidia-smi's used_memory of pid in bytes, or None when it lists no such process."""
    out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = [s.strip() for s in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid):
            return int(parts[1]) * MIB
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shim", required=True)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        return child(a.child)
    tmp = tempfile.mkdtemp(prefix="cudapool-control-cli-")
    ready = os.path.join(tmp, "ready")
    env = dict(os.environ, LD_PRELOAD=os.path.abspath(a.shim), CUDAPOOL_CONTROL="1",
               PYTORCH_NO_CUDA_MEMORY_CACHING="1")
    proc = subprocess.Popen([a.python, os.path.abspath(__file__), "--shim", a.shim, "--child", ready],
                            env=env)
    try:
        t0 = time.monotonic()
        rc, out, err = cudapool(a.python, "stats", str(proc.pid), "--timeout", "60", "--json")
        check("wait", rc == 0 and '"devices"' in out,
              "stats --timeout 60 answered after %.1f s (exit %d) %s"
              % (time.monotonic() - t0, rc, err.strip()[:200]))
        deadline = time.monotonic() + 120
        while not os.path.exists(ready) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        if not os.path.exists(ready):
            check("child", False, "not ready (exit %s)" % proc.poll())
            return 1
        rc, out, err = cudapool(a.python, "top", "--once", "--json")
        row = None
        if rc == 0:
            top = json.loads(out)
            row = next((r for r in top.get("processes", []) if r.get("pid") == proc.pid), None)
        dev = row["devices"][0] if row and row.get("devices") else None
        check("top", dev is not None and dev["reserved_bytes"] >= 2048 * MIB,
              "exit %d, the child's row %s" % (rc, json.dumps(row)[:300]))
        smi = smi_used(proc.pid)
        driver = dev.get("driver_used_bytes") if dev else None
        if smi is None:
            print("INFO driver: nvidia-smi lists no compute process for pid %d (a container hides"
                  " them): the figure must be n/a" % proc.pid)
            check("driver", dev is not None and driver is None, "driver_used_bytes %r" % driver)
        else:
            check("driver", driver is not None and abs(driver - smi) <= MIB,
                  "top's driver figure %r, nvidia-smi %d B (%d MiB); reserved %s"
                  % (driver, smi, smi // MIB, dev and dev["reserved_bytes"]))
        rc, out, err = cudapool(a.python, "stats", str(proc.pid), "--csv")
        rows = list(csv.DictReader(io.StringIO(out))) if rc == 0 else []
        reserved = [int(r["reserved_bytes"]) for r in rows if r.get("reserved_bytes")]
        check("csv", rc == 0 and dev is not None and reserved == [dev["reserved_bytes"]],
              "exit %d, columns %s, reserved %s" % (rc, rows[0].keys() if rows else None, reserved))
    finally:
        open(ready + ".go", "w").close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
    rc, out, err = cudapool(a.python, "stats", "999999")
    check("no-process", rc == 1 and "no process" in err, "exit %d: %s" % (rc, err.strip()[:200]))
    print("control_cli: %d failed" % failures)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
