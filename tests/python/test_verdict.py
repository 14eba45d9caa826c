# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_verdict.py: the verdict's rules (scripts/cudapool_analysis/verdict.py) on
small hand-made report and page objects: when tune runs by default, what empty_cache gives back,
why the peak came (a request larger than every free block, or one that had a large enough free
block of the other pool), one entry per user line among the sites, tune's setting and its saving,
a log of requests only. tests/cli/verdict_agree.sh checks it end to end on real logs."""

import os

from cudapool_analysis import verdict as vmod


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
