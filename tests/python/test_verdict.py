# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_verdict.py: the verdict's rules (scripts/cudapool_analysis/verdict.py) on
small hand-made report and page objects: when tune runs by default, what empty_cache gives back,
why the peak came (a request larger than every free block, or one that had a large enough free
block of the other pool), one entry per user line among the sites, tune's setting and its saving,
tune's idle release (held over time: chosen, not chosen and why, not tried; and through the real
cudapool-tune, skipped without it, on tests/cli/fixtures/server_log.py's log of an inference
server), a log of requests only. tests/cli/verdict_agree.sh checks it end to end on real logs."""

import json
import os
import subprocess
import sys

import pytest

from cudapool_analysis import tools
from cudapool_analysis import verdict as vmod

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "cli", "fixtures"))
import server_log  # noqa: E402  tests/cli/fixtures/server_log.py: tune_idle.sh's log


def report(frag=None, requests=(), replay=None):
    dev = {"peak_reserved": {"bytes": 100 << 20, "time_s": 1.5},
           "peak_allocated": {"bytes": 60 << 20}, "fragmentation": frag,
           "stats": {"reserved_bytes.all.current": 100 << 20,
                     "allocated_bytes.all.current": 10 << 20}}
    return {"devices": {"0": dev}, "largest_requests": list(requests),
            "ending": {"requests_only": replay is not None}, "replay": replay}


def frag(req_block, largest_before):
    return {"allocated": 60 << 20, "fenced": 2 << 20, "free_cached": 38 << 20,
            "largest_free_block": 20 << 20, "regions": 3, "fragmentation": 0.47,
            "set_by": {"action": "segment_alloc", "ptr": "0x1000", "size": 20 << 20},
            "before": {"free_cached": 18 << 20, "largest_free_block": largest_before},
            "request": {"size": req_block, "block_size": req_block, "seq": 9}}


def page(regions, shown=None):
    return {"devices": {"0": {"maps": {"exit": {"regions": len(regions), "shown":
                                                  len(regions) if shown is None else shown,
                                                  "region_list": regions}},
                              "sites_at_peak": [{"site": 0, "count": 2, "bytes": 30},
                                                {"site": 1, "count": 1, "bytes": 5},
                                                {"site": 2, "count": 4, "bytes": 50}]}},
            "sites": {"frames": [["lib.py:1 f", "train.py:9 step"], ["x.py:2 g", "train.py:9 step"],
                                 ["0x7f libtorch.so+0x10"]],
                      "focus": [1, 1, 0], "python": [True, True, False]}}


def test_auto_tune(tmp_path):
    log = tmp_path / "a.jsonl"
    log.write_text("{}\n")
    assert vmod.auto_tune_why_not([str(log)], 10) is None
    assert "more than" in vmod.auto_tune_why_not([str(log)], vmod.AUTO_TUNE_EVENTS + 1)
    assert "regular file" in vmod.auto_tune_why_not(["-"], 10)
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    assert "regular file" in vmod.auto_tune_why_not([str(fifo)], 10)
    assert "cannot be read" in vmod.auto_tune_why_not([str(tmp_path / "missing")], 10)


def test_empty_cache_returns_whole_free_regions_only():
    regions = [{"size": 8, "allocated": 0}, {"size": 16, "allocated": 4}, {"size": 32, "allocated": 0}]
    vd = vmod.verdict(report(), page(regions), None)
    assert vd["devices"]["0"]["exit"]["empty_cache_returns"] == 40
    # a map that does not list every region: not said
    assert vmod.verdict(report(), page(regions, shown=2), None)["devices"]["0"]["exit"][
        "empty_cache_returns"] is None


def test_why_the_peak_came():
    texts = lambda vd: {l["what"]: l["text"] for l in vd["lines"]}
    too_big = texts(vmod.verdict(report(frag(30 << 20, 10 << 20)), None, None))["why"]
    assert "a request of 30.00 MiB found no free block large enough" in too_big
    assert "18.00 MiB free, the largest free block 10.00 MiB" in too_big
    assert "reserved a new segment of 20.00 MiB" in too_big
    assert "2.00 MiB more waited for work on another stream" in too_big
    fitted = texts(vmod.verdict(report(frag(1 << 20, 10 << 20)), None, None))["why"]
    assert "although the cache held a free block of 10.00 MiB" in fitted
    older = frag(1, 1)
    del older["before"], older["request"]        # an engine without them: the figures at the peak
    assert "free in 3 regions" in texts(vmod.verdict(report(older), None, None))["why"]


def test_sites_one_entry_per_user_line_python_first():
    sites = vmod.verdict(report(), page([]), None)["devices"]["0"]["sites"]
    assert [(s["where"], s["bytes"], s["blocks"], s["python"]) for s in sites] == [
        ("train.py:9 step", 35, 3, True), ("0x7f libtorch.so+0x10", 50, 4, False)]


def test_setting_and_saving():
    tune = {"recommendation": {"caveats": ["c"]},
            "logs": [{"results": [{"rank": 2, "setting": "x", "peak_reserved": 90, "vs_own": -0.1},
                                  {"rank": 1, "setting": "expandable_segments:True",
                                   "conf": "expandable_segments:True", "peak_reserved": 75,
                                   "vs_own": -0.25}]}]}
    s = vmod.verdict(report(), None, tune)["setting"]
    assert (s["setting"], s["own_peak_reserved"], s["saving"]) == ("expandable_segments:True", 100, 25)
    keep = {"recommendation": {"keep_own": True, "why": "w"},
            "logs": [{"results": [{"rank": 1, "setting": "own", "peak_reserved": 100, "vs_own": 0.0}]}]}
    assert vmod.verdict(report(), None, keep)["setting"]["keep_own"]
    assert vmod.verdict(report(), None, {"skipped": "why"})["setting"] == {"not_run": "why"}
    assert vmod.verdict(report(), None, None)["setting"]["not_run"]


def test_requests_only_reads_the_replay():
    replay = {"devices": {"0": {"peak_reserved": {"bytes": 7, "time_s": 0.1},
                                "peak_allocated": {"bytes": 5}, "fragmentation": None,
                                "stats": {}}}}
    vd = vmod.verdict(report(replay=replay), None, None)
    assert vd["source"] == "replay" and vd["devices"]["0"]["peak_reserved"] == 7
    assert vd["lines"][0]["what"] == "replay"


MiB = 1 << 20


def idle_row(setting, ms, mean, vs, cost_s, share, peak=2000 * MiB, floor=0, handle=0,
             mapped=14 << 30):
    return {"setting": setting, "conf": setting, "idle_release_ms": ms,
            "idle_release_floor_mb": floor, "expandable_handle_mb": handle, "mean_reserved": mean,
            "vs_without": vs, "peak_reserved": peak, "mapped_again": mapped, "cost_s": cost_s,
            "cost_share": share, "span_ns": 20 * 10**9, "idle_releases": 8}


def idle_tune(chosen, most, rows, budget=0.02, conf="expandable_segments:True,idle_release_ms:100"):
    return {"logs": [{"results": []}],
            "held_over_time": {"tried": True, "not_tried": None, "setting": "own",
                               "cost_budget": budget, "min_saving": 0.05, "peak_tolerance": 0.01,
                               "rows": rows, "chosen": chosen, "most_saving": most},
            "recommendation": {"idle": chosen is not None, "cudapool_conf": conf}}


ROWS = [idle_row("own", 0, 1000.0 * MiB, 0.0, 0.0, 0.0, mapped=0),
        idle_row("idle_release_ms:100", 100, 100.0 * MiB, -0.9, 0.5, 0.025),
        idle_row("idle_release_ms:100,idle_release_floor_mb:512", 100, 600.0 * MiB, -0.4,
                 0.01, 0.0005, floor=512)]


def held_line(vd):
    [line] = [l["text"] for l in vd["lines"] if l["what"] == "held_over_time"]
    return line


def test_held_over_time_chosen():
    vd = vmod.verdict(report(), None, idle_tune(ROWS[2]["setting"], ROWS[1]["setting"], ROWS,
                                                conf="idle_release_ms:100,idle_release_floor_mb:512"))
    h = vd["held_over_time"]
    assert (h["chosen"], h["mean_reserved"], h["without_mean_reserved"], h["saving"]) == (
        True, 600 * MiB, 1000 * MiB, 400 * MiB)
    assert held_line(vd) == (
        "Memory held over time: with CUDAPOOL_CONF=idle_release_ms:100,idle_release_floor_mb:512 "
        "(idle release, cudapool's own keys: the shim gives back cache unused for 100 ms, keeping "
        "512 MiB), the pool would have held 600.00 MiB on average instead of 1000.00 MiB without "
        "idle release (40.0% less), predicted by replaying this log; mapping memory again would "
        "cost about 0.01 s (0.05% of the run).")
    # right after the setting's line
    whats = [l["what"] for l in vd["lines"]]
    assert whats[whats.index("setting") + 1] == "held_over_time"


def test_held_over_time_chosen_with_larger_handles():
    conf = "expandable_segments:True,idle_release_ms:100,expandable_handle_mb:256"
    rows = ROWS[:2] + [idle_row("expandable_handle_mb:256,idle_release_ms:100", 100, 90.0 * MiB,
                                -0.91, 0.1, 0.005, handle=256)]
    vd = vmod.verdict(report(), None, idle_tune(rows[2]["setting"], rows[2]["setting"], rows,
                                                conf=conf))
    assert vd["held_over_time"]["expandable_handle_mb"] == 256
    assert ("the shim gives back cache unused for 100 ms, in driver allocations of up to 256 MiB)"
            in held_line(vd))


def test_held_over_time_not_chosen_says_why():
    vd = vmod.verdict(report(), None, idle_tune(None, ROWS[1]["setting"], ROWS))
    h = vd["held_over_time"]
    assert not h["chosen"] and h["why_not"] == ["cost"] and h["saving"] == 900 * MiB
    assert held_line(vd) == (
        "Memory held over time: idle release (cudapool's own keys) would save at most 900.00 MiB "
        "on average: with CUDAPOOL_CONF=idle_release_ms:100 the pool would have held 100.00 MiB "
        "instead of 1000.00 MiB without idle release (90.0% less), predicted by replaying this "
        "log; tune does not recommend it: mapping memory again would cost about 0.5 s, 2.5% of "
        "the run, more than the 2% tune allows (`cudapool tune --idle-cost PCT` allows PCT% of "
        "the run).")
    little = [ROWS[0], idle_row("idle_release_ms:100", 100, 970.0 * MiB, -0.03, 0.0, 0.0,
                                peak=2100 * MiB)]
    vd = vmod.verdict(report(), None, idle_tune(None, "idle_release_ms:100", little))
    assert vd["held_over_time"]["why_not"] == ["saving", "peak"]
    assert held_line(vd).endswith(
        "(3.0% less), predicted by replaying this log; tune does not recommend it: it saves less "
        "than the 5% tune asks; its peak would be 2.05 GiB instead of 1.95 GiB.")
    nothing = [ROWS[0], idle_row("idle_release_ms:100", 100, 1000.0 * MiB, 0.0, 0.0, 0.0)]
    assert held_line(vmod.verdict(report(), None, idle_tune(None, "idle_release_ms:100", nothing))) \
        == ("Memory held over time: idle release (cudapool's own keys) would not have held less "
            "on average at any delay cudapool tune tried.")


def test_held_over_time_not_tried_says_nothing():
    tune = idle_tune(None, None, [])
    tune["held_over_time"].update(tried=False, not_tried="idle release not tried (--no-idle)")
    for t in (tune, None, {"skipped": "why"}, {"logs": []}):
        vd = vmod.verdict(report(), None, t)
        assert vd["held_over_time"] is None
        assert "held_over_time" not in [l["what"] for l in vd["lines"]]


@pytest.mark.skipif(tools.find_tool("cudapool-tune") is None, reason="cudapool-tune not built")
def test_held_over_time_from_the_real_tune(tmp_path):
    log = str(tmp_path / "server.jsonl")
    server_log.write(log)

    def tune(*args):
        return json.loads(subprocess.run(tools.tool_command("cudapool-tune") + ["--quiet", "--json"]
                                         + list(args) + [log], stdout=subprocess.PIPE,
                                         check=True).stdout)
    # idle_release_ms:100 chosen: 204.32 MiB instead of 1.97 GiB (tune's own text, docs/tune.md)
    line = held_line(vmod.verdict(report(), None, tune()))
    assert line.startswith(
        "Memory held over time: with CUDAPOOL_CONF=idle_release_ms:100 (idle release, cudapool's "
        "own keys: the shim gives back cache unused for 100 ms), the pool would have held "
        "204.32 MiB on average instead of 1.97 GiB without idle release (89.9% less), predicted "
        "by replaying this log; mapping memory again would cost about "), line
    # a budget of 0.01% of the span: none affordable; the most saving named, the cost the reason
    t = tune("--idle-cost", "0.01")
    assert t["held_over_time"]["chosen"] is None
    line = held_line(vmod.verdict(report(), None, t))
    assert line.startswith(
        "Memory held over time: idle release (cudapool's own keys) would save at most 1.77 GiB on "
        "average: with CUDAPOOL_CONF=idle_release_ms:100 the pool would have held 204.32 MiB "
        "instead of 1.97 GiB without idle release (89.9% less)"), line
    assert "more than the 0.01% tune allows (`cudapool tune --idle-cost PCT`" in line, line
    assert vmod.verdict(report(), None, tune("--no-idle"))["held_over_time"] is None
