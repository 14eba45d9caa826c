# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_python_stacks.py: the readers and the outputs of the Python stacks of a log
(CUDAPOOL_BACKTRACE=python; docs/log-format.md "Python stacks"), on the fixture
tests/cli/fixtures/python_stacks.jsonl: the engine (cudapool-analyze) neither counts the definition
lines as events nor as malformed, lists a second definition of an id, keys the allocation sites by
Python stack (named by the first user frame, Python sites first), and its memory_viz export
carries the Python frames in PyTorch's frame form and order (memviz_snapshot.combined); the test
oracle tests/oracle/reader.py reads the lines the same way. Not here: which lines are malformed
(tests/cli/replay_report_agree.sh, line_rules_python.jsonl), the engine and the oracle field by
field (tests/cli/analyze_agree.sh, memviz_agree.sh). Needs the build's cudapool-analyze; the
engine's tests are skipped without one."""

import json
import os
import subprocess

import pytest

from conftest import FIXTURES
from cudapool_analysis import memviz, tools
from cudapool_analysis.memviz_snapshot import combined
from oracle import pystacks
from oracle.reader import LogReader

LOG = os.path.join(FIXTURES, "python_stacks.jsonl")
TRAIN = "/home/me/train.py"
LINEAR = "/usr/lib/python3/dist-packages/torch/nn/modules/linear.py"


def engine(*options):
    tool = tools.find_tool("cudapool-analyze")
    if tool is None:
        pytest.skip("no cudapool-analyze built")
    out = subprocess.run([tool, "--quiet", *options, LOG], capture_output=True, check=True)
    return json.loads(out.stdout)["logs"][0]


def test_definition_lines_are_neither_events_nor_malformed():
    rep = engine()["report"]
    assert rep["malformed_lines"] == 0
    assert rep["events"] == 21          # 32 lines: the header, 9 definitions, the summary
    assert "python_frame" not in rep["actions"] and "python_stack" not in rep["actions"]
    assert [p["what"] for p in rep["problems"]] == ["a second python_frame 2: ignored"]


def test_sites_keyed_by_python_stack_named_by_the_first_user_frame():
    page = engine()["page"]
    sites = page["sites"]
    assert sites["python"] == [True, True, True, False]
    assert sites["frames"][0] == [LINEAR + ":125 Linear.forward", TRAIN + ":41 Net.forward",
                                  TRAIN + ":88 <module>"]
    # The standard library's frame is passed over; a long path is shortened.
    assert sites["frames"][1] == ["/usr/lib/python3.11/contextlib.py:81 inner",
                                  ".../sources/models/layers.py:7 Block.__call__",
                                  TRAIN + ":88 <module>"]
    # A frame no definition gave is unknown; no user frame: the innermost names the site.
    assert sites["frames"][2] == ["?", LINEAR + ":125 Linear.forward"]
    assert sites["focus"] == [1, 1, 0, 1]
    # Python sites first, though the native one allocated the most bytes.
    assert [s["site"] for s in sites["frequent"]] == [0, 1, 2, 3]
    peak = page["devices"]["0"]["sites_at_peak"]
    assert [s["site"] for s in peak] == [2, 3] and peak[1]["bytes"] > peak[0]["bytes"]


def test_the_oracle_reads_the_same_stacks():
    with open(LOG, "rb") as f:
        reader = LogReader(f)
        stacks = [obj.get(pystacks.RESOLVED) for *_, action, _, _, _, _, obj in reader
                  if action == "alloc"]
    assert reader.problems.malformed == 0
    assert reader.problems.listed == [(10, "a second python_frame 2: ignored")]
    assert stacks[0] == ((LINEAR, 125, "Linear.forward"), (TRAIN, 41, "Net.forward"),
                         (TRAIN, 88, "<module>"))
    assert stacks[2] == (None, (LINEAR, 125, "Linear.forward"))
    assert stacks[6] is None                  # native frames only: no python_stack
    assert stacks[7] is None                  # python_stack 42: no such stack
    assert pystacks.focus(stacks[1]) == 1 and pystacks.focus(stacks[2]) == 0


def test_memviz_frames_carry_the_python_stack():
    part = engine("--memory-viz", "0")["memviz"]
    snap, _ = memviz.from_engine(part, 0)
    allocs = [e for e in snap["device_traces"][0] if e["action"] == "alloc"]
    first = allocs[0]["frames"]
    # The native frames (no interpreter frame named among them), then the Python ones,
    # innermost first, as PyTorch's snapshot holds a Python frame.
    assert [f["filename"] for f in first] == ["/opt/cuda/lib64/libcudart.so.13",
                                              "/usr/bin/python3.11", LINEAR, TRAIN, TRAIN]
    assert first[2] == {"filename": LINEAR, "line": 125, "name": "Linear.forward"}
    assert allocs[2]["frames"][2] == {"filename": "??", "line": 0, "name": "??"}
    assert all(type(f["filename"]) is str for f in allocs[6]["frames"])
    assert len(allocs[6]["frames"]) == 2      # native only
    held = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
    assert any(f.get("line") == 125 for b in held for f in b["frames"])


class Names:
    def memviz(self, frame):
        return {"name": frame, "filename": "lib", "line": 0}


def test_combined_as_pytorch_interleaves():
    py = [{"filename": "a.py", "line": 1, "name": "inner"},
          {"filename": "b.py", "line": 2, "name": "outer"},
          {"filename": "c.py", "line": 3, "name": "main"}]
    raw = ("alloc", "_PyEval_EvalFrameDefault", "call", "_PyEval_EvalFrameDefault") + tuple(py)
    names = [f["name"] for f in combined(raw, Names())]
    # Each interpreter frame gets the next Python frame before it; the rest go last.
    assert names == ["alloc", "inner", "_PyEval_EvalFrameDefault", "call", "outer",
                     "_PyEval_EvalFrameDefault", "main"]
    assert combined(("x",), Names()) == [{"name": "x", "filename": "lib", "line": 0}]
