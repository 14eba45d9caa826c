#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch_replay.py: replays one parity case through PyTorch's own CUDA caching allocator.

    python3 tests/parity/torch_replay.py CASE_NAME [--cases FILE]
    python3 tests/parity/torch_replay.py --build-only

Runs on the GPU machine (torch 2.11 with CUDA, ninja, nvcc). Sets PYTORCH_CUDA_ALLOC_CONF to the
case's conf before torch is imported, applies the case's memory fraction with
torch.cuda.set_per_process_memory_fraction, replays the trace with
c10::cuda::CUDACachingAllocator::raw_alloc / raw_delete / emptyCache from a small C++ extension
(built once with torch.utils.cpp_extension.load_inline and cached), and prints ONE JSON line:

    {"case": ..., "total_memory": N, "failed_allocs": N, "stats": torch.cuda.memory_stats(0), ...}

One case per process: the allocator's settings are read once per process.
"""

import argparse
import hashlib
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_paths import resolve_trace  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

OP_ALLOC, OP_FREE, OP_EMPTY_CACHE = 0, 1, 2
# Trace actions of torch.cuda.memory._snapshot() kept as the segment trace (see segment_trace()).
SEGMENT_ACTIONS = ("segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom")

CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/util/Exception.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

// Replays an allocation log through PyTorch's CUDA caching allocator on the current device and
// stream. ops[i]: 0 = allocate sizes[i] bytes as ids[i], 1 = free ids[i], 2 = empty the cache.
// Returns the number of allocations that raised c10::OutOfMemoryError. A later free of such an id
// is skipped (cudapool replay does the same).
int64_t replay(std::vector<int64_t> ops, std::vector<int64_t> ids, std::vector<int64_t> sizes) {
  namespace alloc = c10::cuda::CUDACachingAllocator;
  TORCH_CHECK(ops.size() == ids.size() && ops.size() == sizes.size(),
              "replay: ops, ids and sizes differ in length");
  std::unordered_map<int64_t, void*> live;
  std::unordered_set<int64_t> failed;
  live.reserve(1024);
  int64_t n_failed = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const int64_t id = ids[i];
    switch (ops[i]) {
      case 0: {
        TORCH_CHECK(sizes[i] > 0, "replay: op ", i, ": allocation of ", sizes[i], " bytes");
        TORCH_CHECK(live.find(id) == live.end(), "replay: op ", i, ": id ", id,
                    " allocated while live");
        failed.erase(id);
        void* p = nullptr;
        try {
          p = alloc::raw_alloc(static_cast<std::size_t>(sizes[i]));
        } catch (const c10::OutOfMemoryError&) {
          failed.insert(id);
          ++n_failed;
          break;
        }
        TORCH_CHECK(p != nullptr, "replay: op ", i, ": raw_alloc returned null");
        live.emplace(id, p);
        break;
      }
      case 1: {
        auto it = live.find(id);
        if (it == live.end()) {
          TORCH_CHECK(failed.erase(id) == 1, "replay: op ", i, ": free of unknown id ", id);
          break;  // its allocation failed: nothing to free
        }
        alloc::raw_delete(it->second);
        live.erase(it);
        break;
      }
      case 2:
        // torch 2.11 declares `void emptyCache(MempoolId_t mempool_id = {0, 0})` (releases the
        // default pool's cached blocks); releases before the mempool argument declare
        // `void emptyCache()`. This call compiles against both. Fallback if a header has neither:
        //   alloc::get()->emptyCache();
        alloc::emptyCache();
        break;
      default:
        TORCH_CHECK(false, "replay: op ", i, ": unknown op ", ops[i]);
    }
  }
  return n_failed;
}
"""


def fail(msg, code=2):
    print("torch_replay: " + msg, file=sys.stderr)
    sys.exit(code)


def load_case(name, cases_file):
    with open(cases_file) as f:
        cases = json.load(f)["cases"]
    for c in cases:
        if c["name"] == name:
            return c
    fail("no case %r in %s" % (name, cases_file))


def parse_trace(path):
    """(header, ops, ids, sizes) from a cudapool.log/1 file; other actions are ignored."""
    ops, ids, sizes = [], [], []
    with open(path) as f:
        header = json.loads(f.readline())
        if header.get("schema") != "cudapool.log/1":
            fail("%s: not a cudapool.log/1 file" % path)
        for lineno, line in enumerate(f, start=2):
            if not line.strip():
                continue
            ev = json.loads(line)
            if ev.get("dev", 0) != 0:
                fail("%s:%d: device %r (parity traces use device 0)"
                     % (path, lineno, ev.get("dev")))
            action = ev.get("action")
            if action == "oom":
                # cudapool replay retries the request of an oom event; nothing here does that.
                fail("%s:%d: oom events are not supported by the parity replay" % (path, lineno))
            if action == "alloc":
                ops.append(OP_ALLOC)
            elif action == "free_requested":
                ops.append(OP_FREE)
            elif action == "empty_cache":
                ops.append(OP_EMPTY_CACHE)
            else:
                continue
            ids.append(int(ev.get("ptr", "0x0"), 16))
            sizes.append(int(ev.get("size", 0)))
    return header, ops, ids, sizes


def build_dir():
    """tests/parity/.build/torch-ext, else $TMPDIR; reused by every later process."""
    candidates = [os.path.join(HERE, ".build", "torch-ext")]
    tmp = os.environ.get("TMPDIR") or "/tmp"
    candidates.append(os.path.join(tmp, "cudapool-parity-torch-ext"))
    for d in candidates:
        try:
            os.makedirs(d, exist_ok=True)
            probe = os.path.join(d, ".write-probe.%d" % os.getpid())
            with open(probe, "w") as f:
                f.write("")
            os.remove(probe)
            return d
        except OSError:
            continue
    fail("no writable build directory (tried %s)" % ", ".join(candidates))


def load_extension(verbose=False):
    from torch.utils.cpp_extension import load_inline

    # The name carries the source hash, so a changed source never loads a stale module.
    digest = hashlib.sha1(CPP_SOURCE.encode()).hexdigest()[:12]
    # Only host code is compiled; this just keeps cpp_extension from probing every arch.
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    return load_inline(
        name="cudapool_parity_replay_" + digest,
        cpp_sources=[CPP_SOURCE],
        functions=["replay"],
        with_cuda=True,  # CUDA include path; links c10_cuda (the allocator) and cudart
        extra_cflags=["-O2"],
        build_directory=build_dir(),
        verbose=verbose,
    )


def start_segment_trace(torch, n_ops):
    """Has the allocator record its trace (no stacks: cheap) so that the device addresses the
    driver gave each segment can be reported. Diagnostic only: the replay and the stats do not
    depend on it. PARITY_SEGMENT_TRACE=0 turns it off."""
    if os.environ.get("PARITY_SEGMENT_TRACE", "1") == "0":
        return "off"
    try:
        torch.cuda.memory._record_memory_history(
            enabled="all", context=None, stacks="python", max_entries=4 * n_ops + 10000)
        return "on"
    except Exception as e:  # a private API: never let it fail the case
        return "unavailable: %s: %s" % (type(e).__name__, e)


def segment_trace(torch):
    """[[action, address, size], ...] in order: segment allocs / frees (expandable segments: page
    maps / unmaps) and OOMs (address: the free memory cudaMemGetInfo reported)."""
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    traces = snap.get("device_traces") or [[]]
    out = []
    for e in traces[0]:
        if e.get("action") in SEGMENT_ACTIONS:
            out.append([e["action"], int(e.get("addr", 0)), int(e.get("size", 0))])
    return out


def set_allocator_env(conf):
    """Before torch is imported: the case's conf and nothing else that changes the allocator."""
    for var in ("PYTORCH_ALLOC_CONF", "PYTORCH_NO_CUDA_MEMORY_CACHING", "PYTORCH_CUDA_ALLOC_CONF",
                "PYTORCH_HIP_ALLOC_CONF"):
        os.environ.pop(var, None)
    if conf:
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = conf


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("case", nargs="?", help="case name from cases.json")
    ap.add_argument("--cases", default=os.path.join(HERE, "cases.json"))
    ap.add_argument("--build-only", action="store_true",
                    help="build (or find) the extension and exit")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args(argv)

    if args.build_only:
        set_allocator_env("")
        t0 = time.time()
        # run_parity.py builds first and alone: a lock file left by a build that was killed would
        # make cpp_extension wait for ever, so drop it here.
        stale = os.path.join(build_dir(), "lock")
        if os.path.exists(stale):
            os.remove(stale)
        import torch

        load_extension(verbose=args.verbose)
        print(json.dumps({"build": "ok", "torch": torch.__version__,
                          "seconds": round(time.time() - t0, 1)}))
        return 0
    if not args.case:
        ap.error("a case name is required")

    case = load_case(args.case, args.cases)
    conf = case.get("conf") or ""
    fraction = case.get("fraction")
    trace = resolve_trace(case["trace"], args.cases)
    header, ops, ids, sizes = parse_trace(trace)

    set_allocator_env(conf)
    t0 = time.time()
    import torch

    if not torch.cuda.is_available():
        fail("torch.cuda.is_available() is False")
    ext = load_extension(verbose=args.verbose)
    torch.cuda.init()
    torch.cuda.set_device(0)
    backend = torch.cuda.get_allocator_backend()
    if backend != "native":
        fail("allocator backend is %r, not 'native'" % backend)
    props = torch.cuda.get_device_properties(0)
    total_memory = int(props.total_memory)
    try:
        mem_info_total = int(torch.cuda.mem_get_info(0)[1])
    except Exception:  # informational only
        mem_info_total = None
    if fraction is not None:
        torch.cuda.set_per_process_memory_fraction(float(fraction), 0)

    # Nothing may have used the allocator yet; if something did, say so (the comparison will
    # show it) rather than lose the case.
    before = torch.cuda.memory_stats(0)
    busy = {k: v for k, v in before.items()
            if v and (k.endswith(".current") or k.startswith("num_device_alloc"))}
    if busy:
        print("torch_replay: the allocator was used before the replay: %s" % json.dumps(busy),
              file=sys.stderr)

    seg_status = start_segment_trace(torch, len(ops))
    t1 = time.time()
    failed = int(ext.replay(ops, ids, sizes))
    torch.cuda.synchronize(0)
    t2 = time.time()
    stats = dict(torch.cuda.memory_stats(0))
    seg_trace = []
    if seg_status == "on":
        try:
            seg_trace = segment_trace(torch)
        except Exception as e:
            seg_status = "error: %s: %s" % (type(e).__name__, e)

    out = {
        "case": case["name"],
        "trace": case["trace"],
        "conf": conf,
        "fraction": fraction,
        "total_memory": total_memory,
        "mem_get_info_total": mem_info_total,
        "device_name": props.name,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "events": len(ops),
        "failed_allocs": failed,
        "setup_s": round(t1 - t0, 2),
        "replay_s": round(t2 - t1, 2),
        "stats": stats,
        "used_before_replay": busy,
        "segment_trace_status": seg_status,
        "segment_trace": seg_trace,
    }
    sys.stdout.write(json.dumps(out, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
