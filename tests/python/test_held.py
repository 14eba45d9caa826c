# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_held.py: the words of memory held over time (scripts/cudapool_analysis/
held.py) on small hand-made report objects: the level's forms (as the engine's
tools/analyze/held_report.h takes them), the lines of a device and of all devices together, no
time span, a time above the level the engine could not place exactly (a range), a log of requests
only (the replay's reserved figures, said so), a mean left out; the page's part. The figures
themselves are the engine's: tests/cli/report_held.sh checks them on hand-made logs."""

from fractions import Fraction

import pytest

from cudapool_analysis import held

MiB = 1 << 20
S = 10 ** 9


@pytest.mark.parametrize("text, want", [
    ("0.5", ("of_peak", Fraction(1, 2))), ("0.25", ("of_peak", Fraction(1, 4))),
    ("1.0", ("of_peak", Fraction(1))), ("0.0", ("of_peak", Fraction(0))),
    ("00.5", ("of_peak", Fraction(1, 2))), ("10G", ("bytes", 10 << 30)),
    ("512MiB", ("bytes", 512 << 20)), ("1.5t", ("bytes", 3 << 39)), ("1", ("bytes", 1)),
    ("1.1K", ("bytes", 1126)), ("18446744073709551615", ("bytes", (1 << 64) - 1)),
])
def test_level_forms(text, want):
    assert held.parse_level(text) == want


@pytest.mark.parametrize("text", ["1.5", "2.0", "", ".5", "0.", "half", "-0.5", "50%", "1e9",
                                  "0.1234567891", "18446744073709551616", "16E", "2Gi"])
def test_levels_refused(text):
    with pytest.raises(ValueError, match="not a level"):
        held.parse_level(text)


def reserved(mean, level, above_ns, span_s=10.0, unsure_ns=0):
    return {"mean": mean, "level": level, "above_ns": above_ns, "above_s": above_ns / 1e9,
            "share": round(above_ns / (span_s * S), 6), "unsure_ns": unsure_ns}


def report(span_s=10.0, devices=None, level="0.5", replay=None):
    devices = devices or {"0": {"allocated": {"mean": 3 * MiB},
                                "reserved": reserved(8 * MiB, 20 * MiB, 2 * S)}}
    of_peak = float(level) if "." in level else None
    whole = {"from_t_ns": S, "to_t_ns": S + int(span_s * S), "span_s": span_s,
             "level": {"given": level, "of_peak": of_peak,
                       "bytes": None if of_peak is not None else held.parse_level(level)[1]},
             "peak_reserved": {"bytes": 40 * MiB, "seq": 3, "t_ns": 2 * S, "time_s": 1.0},
             "allocated": {"mean": 3 * MiB}, "reserved": reserved(8 * MiB, 20 * MiB, 2 * S)}
    return {"held": whole, "devices": {d: {"held": h} for d, h in devices.items()},
            "replay": replay}


def test_a_device_in_words():
    lines = held.held_lines(report(), "0")
    assert lines == [
        "Held over time, device 0 (over the log's span, its first event to its last: "
        "10.000000 s):",
        "  mean allocated  3.00 MiB (3145728 bytes)",
        "  mean reserved   8.00 MiB (8388608 bytes)",
        "  time above      reserved stayed above 20.00 MiB (half the peak) for 2.000000 s, "
        "20.0% of the time"]


def test_all_devices_their_peak_first():
    lines = held.held_lines(report())
    assert lines[0].startswith("Held over time, all devices together (")
    assert lines[1] == ("  peak reserved   40.00 MiB (41943040 bytes) at 1.000000 s (seq 3), the "
                        "devices' reserved bytes added up")


def test_the_level_given():
    assert "(--level 10G)" in held.held_lines(report(level="10G"), "0")[-1]
    assert "(0.25 of the peak)" in held.held_lines(report(level="0.25"), "0")[-1]


def test_no_time_span_no_division():
    rep = report(span_s=0.0, devices={"0": {"allocated": {"mean": None}, "reserved": {
        "mean": None, "level": 10, "above_ns": None, "above_s": None, "share": None,
        "unsure_ns": 0}}})
    assert held.held_lines(rep, "0") == [
        "Held over time, device 0: no time span (the log's first and last events are at the "
        "same time): no mean, no time above a level"]
    rep["held"]["span_s"] = None
    assert held.held_lines(rep, "0") == ["Held over time, device 0: none (no events)"]


def test_unsure_time_is_a_range():
    rep = report(devices={"0": {"allocated": None, "reserved": reserved(
        8 * MiB, 20 * MiB, 2 * S, unsure_ns=S // 2)}})
    lines = held.held_lines(rep, "0")
    assert lines[1] == "  mean allocated  none (no alloc events)"
    assert "for 2.000000 s to 2.500000 s, 20.0% to 25.0% of the time" in lines[3], lines[3]


def test_requests_only_the_replays_reserved():
    replay = {"held": report()["held"], "devices": {"0": {"held": {
        "allocated": {"mean": 3 * MiB}, "reserved": reserved(16 * MiB, 32 * MiB, S)}}}}
    rep = report(devices={"0": {"allocated": {"mean": 3 * MiB}, "reserved": None}},
                 replay=replay)
    lines = held.held_lines(rep, "0")
    assert lines[2] == ("  mean reserved   16.00 MiB (16777216 bytes), as replayed (the log has "
                        "no segment events)")
    assert lines[3].endswith("for 1.000000 s, 10.0% of the time, as replayed (the log has no "
                             "segment events)")
    page = held.page_held(rep)
    assert page["replay"]["devices"]["0"]["reserved"]["mean"] == 16 * MiB
    assert page["devices"]["0"]["reserved"] is None and page["log"] is rep["held"]


def test_a_mean_left_out():
    rep = report(devices={"0": {"allocated": {"mean": None},
                                "reserved": dict(reserved(None, 20, S), mean=None)}})
    lines = held.held_lines(rep, "0")
    assert lines[1] == "  mean allocated  left out (see the notes)"
    assert lines[2] == "  mean reserved   left out (see the notes)"
