# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_perfetto.py: perfetto.py's side of the export from the engine
(perfetto.from_engine): the engine's t_ns put on the wall clock by the header (start_unix_ns +
t_ns - start_t_ns; without start_t_ns the first event at start_unix_ns; without either at the
earliest start of the logs), the instants' args built in the trace's order and their times never
going back on the process's track; and a refusal by the engine said once, exit status 1. The whole
trace against the Python oracle: tests/cli/perfetto_agree.sh."""

import io
import os
import subprocess
import sys

from conftest import FIXTURES, SOURCE
from cudapool_analysis import perfetto


def part(header, first_t_ns=500, instants=()):
    return {"replayed": False, "header": header, "replay_header": None, "ended_early": None,
            "events": 3, "first_t_ns": first_t_ns, "device_notes": [],
            "devices": [{"dev": 0, "num_device_alloc": 1, "no_free_completed": False,
                         "peak_allocated": 512, "peak_reserved": 4096,
                         "points": [[500, 0, 4096, 0, 4096], [700, 512, 4096, 512, 3584]]}],
            "instants": list(instants), "instant_counts": [[0, "oom", 5]]}


def test_wall_clock_from_start_t_ns():
    log = perfetto.from_engine("L", part({"start_unix_ns": 10 ** 18, "start_t_ns": 100}), 0)
    assert log.clock.how == "start_t_ns"
    assert log.devices[0]["points"] == [(10 ** 18 + 400, (0, 4096, 0, 4096)),
                                        (10 ** 18 + 600, (512, 4096, 512, 3584))]
    assert log.instant_counts == {(0, "oom"): 5}


def test_first_event_at_start_unix_ns_or_at_the_earliest_start():
    log = perfetto.from_engine("L", part({"start_unix_ns": 7000}), 0)
    assert log.clock.how == "first event"
    assert [t for t, _ in log.devices[0]["points"]] == [7000, 7200]
    log = perfetto.from_engine("L", part(None), 9000)
    assert log.clock.how == "none"
    assert [t for t, _ in log.devices[0]["points"]] == [9000, 9200]


def test_instants_args_and_times_never_go_back():
    log = perfetto.from_engine("L", part({"start_unix_ns": 0, "start_t_ns": 0}, instants=[
        [900, "oom", 0, 64, 0, {"cause": "shortage"}],
        [800, "segment_alloc", 1, 4096, 4096, {"segment": "0x1000"}]]), 0)
    assert log.instants == [(900, "oom", {"device": 0, "size": 64, "cause": "shortage"}),
                            (900, "segment_alloc", {"device": 1, "size": 4096, "ptr": "0x1000",
                                                    "segment": "0x1000"})]
    out = io.StringIO()
    perfetto.render(out, [log], 0, 20000, 2)
    assert '"instants_left_out":{"0 oom":3}' in out.getvalue()


def test_a_log_the_engine_refuses_is_said_once(tmp_path):
    bad = tmp_path / "text.jsonl"
    bad.write_text("hello\n")
    done = subprocess.run(
        [sys.executable, "-m", "cudapool_analysis", "export", "--quiet", "--perfetto",
         str(tmp_path / "o.json"), os.path.join(FIXTURES, "normal.jsonl"), str(bad)],
        capture_output=True, text=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(SOURCE, "scripts")))
    assert done.returncode == 1
    assert done.stderr.count("is not a cudapool log") == 1, done.stderr
    assert done.stderr.startswith("cudapool export: "), done.stderr
    assert not (tmp_path / "o.json").exists()
