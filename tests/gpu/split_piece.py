#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/gpu/split_piece.py: a free piece of a split segment is never given back to the driver as
if it were a segment (pool/device_pool_release.cpp, release_available_cached_blocks). Run by
tests/gpu/sections/conf.sh with PyTorch's cache off under
CUDAPOOL_CONF=large_segment_size_mb:32,max_split_size_mb:22 and a memory fraction whose cap is
about 43 MiB: a 5 MiB tensor takes a 32 MiB segment and leaves a
free 27 MiB piece, "oversize" by its size; a 30 MiB tensor beside it does not fit under the cap,
so the pool frees oversize cached blocks first. Before the fix it freed the piece as a segment
(cuMemFree of a pointer inside a segment, then a use-after-free in the pool). Now: out of memory
(the piece stays; PyTorch with its cache off raises its CUDA error), and after the 5 MiB tensor
is dropped the 30 MiB one fits (the whole segment, within max_non_split_rounding), filled and
checked.
Exit 0 and a last line `split_piece: ok` when every check passed. Not a benchmark.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shim_probe import shim_loaded  # noqa: E402
from named_checks import NamedChecks  # noqa: E402

MIB = 1 << 20


def main():
    import torch

    print("split_piece: torch %s, shim %s, CUDAPOOL_CONF=%s"
          % (torch.__version__, "loaded" if shim_loaded() else "not-loaded",
             os.environ.get("CUDAPOOL_CONF", "(unset)")))
    check = NamedChecks("split_piece", 14)
    small = torch.full((5 * MIB,), 7, dtype=torch.uint8, device="cuda")
    refused = False
    try:
        torch.empty((30 * MIB,), dtype=torch.uint8, device="cuda")
    except RuntimeError as e:  # cache off: torch.AcceleratorError "CUDA error: out of memory"
        refused = "out of memory" in str(e)
    check("refused", refused, "30 MiB beside 5 MiB under a cap of about 43 MiB: out of memory")
    # Checked on the host: any temporary on the device would need a segment of its own, which the
    # cap refuses (the free piece is oversize: no request below the limit takes it).
    check("small_intact", bool((small.cpu() == 7).all()), "the 5 MiB tensor still holds its data")
    del small
    torch.cuda.synchronize()
    big = torch.full((30 * MIB,), 3, dtype=torch.uint8, device="cuda")
    check("fits_after", bool((big.cpu() == 3).all()),
          "30 MiB after the 5 MiB tensor went: filled and checked")
    del big
    torch.cuda.synchronize()
    return check.finish()


if __name__ == "__main__":
    sys.exit(main())
