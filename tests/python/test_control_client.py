# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_control_client.py: the pieces of the live commands' client that need no
process (issue 29): NVML's process entries of either size (nvml.parse), the match of a pool's
device ordinal with NVML's GPU (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER, GPU models), the one
column table (controltable: top's 80 columns, CSV = JSON keys), and controlproc's reasons for a
process without a socket (no process, another user's, a thread's id, "(waited S s)" on each). Not here: real processes and the stand-in libnvidia-ml
(tests/cli/control_live.sh), the command line without processes (tests/cli/control_client.sh).
"""

import struct

import pytest

from cudapool_analysis import controlproc, controltable, nvml


def entries(stride, items):
    raw = b""
    for pid, used in items:
        e = struct.pack("<IIQII", pid, 0, used, 0xFFFFFFFF, 0xFFFFFFFF)
        raw += e + (b"\0" * 8 if stride == 32 else b"")
    return raw + bytes([nvml.FILL]) * (32 * (len(items) + 8) - len(raw))


@pytest.mark.parametrize("stride", [24, 32])
def test_parse_either_entry_size(stride):
    got = nvml.parse(entries(stride, [(10, 100), (11, 2 << 30), (10, 5), (12, nvml.NOT_AVAILABLE)]), 4)
    assert got == {10: 105, 11: 2 << 30, 12: None}


def reading(names=("H200", "H200", "H200")):
    return nvml.Reading([{"uuid": "GPU-aaaa-%d" % i, "name": n, "used": {}}
                         for i, n in enumerate(names)])


@pytest.mark.parametrize("environ, want", [
    ({}, [0, 1, 2]),
    ({"CUDA_VISIBLE_DEVICES": "2,0"}, [2, 0]),
    ({"CUDA_VISIBLE_DEVICES": "1,7,0"}, [1]),          # CUDA stops at a device that is not there
    ({"CUDA_VISIBLE_DEVICES": ""}, []),
    ({"CUDA_VISIBLE_DEVICES": "GPU-aaaa-2"}, [2]),
    ({"CUDA_VISIBLE_DEVICES": "GPU-aaaa"}, None),       # ambiguous prefix
    ({"CUDA_VISIBLE_DEVICES": "MIG-1234"}, None),
    (None, [0, 1, 2]),
])
def test_visible(environ, want):
    assert nvml.visible(reading(), environ) == want


def test_visible_mixed_models_needs_pci_order():
    r = reading(("A100", "H200", "H200"))
    assert nvml.visible(r, {}) is None                            # fastest first: unknown
    assert nvml.visible(r, {"CUDA_VISIBLE_DEVICES": "1"}) is None
    assert nvml.visible(r, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID", "CUDA_VISIBLE_DEVICES": "1"}) == [1]
    assert nvml.visible(r, {"CUDA_VISIBLE_DEVICES": "GPU-aaaa-1"}) == [1]    # a UUID is sure


def test_figures():
    r = reading()
    r.devices[2]["used"] = {42: 900}
    r.devices[0]["used"] = {42: 100, 7: 5}
    assert nvml.figures(r, 42, [0, 1], {"CUDA_VISIBLE_DEVICES": "2,0"}) == (1000, {0: 900, 1: 100})
    # a device NVML does not list the process on: n/a, never another process's figure
    assert nvml.figures(r, 42, [1], {}) == (1000, {1: None})
    assert nvml.figures(r, 99, [0], {}) == (None, {0: None})
    assert nvml.figures(None, 42, [0], {}) == (None, {0: None})
    mixed = reading(("A100", "H200", "H200"))
    mixed.devices[1]["used"] = {42: 77}
    assert nvml.figures(mixed, 42, [0], {}) == (77, {0: 77})     # one GPU, one device
    mixed.devices[2]["used"] = {42: 1}
    assert nvml.figures(mixed, 42, [0, 1], {}) == (78, {0: None, 1: None})


def test_absent_library():
    nv = nvml.Nvml("/nonexistent/libnvidia-ml.so.1")
    assert nv.read() is None and nv.why_not.startswith("no NVML (")
    nv.close()


@pytest.mark.parametrize("n", [0, 1023, 1024, 99 << 10, 100 << 20, (1 << 30) - 1, 5 << 40])
def test_size_fits(n):
    assert len(controltable.size(n)) <= 8


def answer(pid):
    stats = {"reserved_bytes.all.current": 64 << 20, "allocated_bytes.all.current": 10 << 20,
             "active_bytes.all.current": 12 << 20, "num_ooms": 3}
    return {"pid": pid, "argv": ["/usr/bin/python3", "train.py", "--epochs", "90" * 40],
            "devices": [{"device": 0, "stats": stats, "largest_free_block": 26 << 20}]}


def test_one_table():
    row = controltable.process_row(4194303, answer(4194303), (None, {0: None}))
    d = row["devices"][0]
    assert d["fenced_bytes"] == 2 << 20 and d["free_bytes"] == 52 << 20
    assert d["fragmentation"] == 0.5 and d["ooms"] == 3 and d["driver_used_bytes"] is None
    assert list(d) == controltable.DEVICE_KEYS
    lines = controltable.top_text([row])
    assert all(len(line) <= 80 for line in lines)
    assert lines[1].split()[:9] == ["4194303", "0", "64.0", "MiB", "n/a", "10.0", "MiB", "2.0",
                                    "MiB"]
    csv = controltable.csv_lines([row], 1.5).splitlines()
    assert csv[0].split(",") == [c[0] for c in controltable.COLUMNS]
    values = dict(zip(csv[0].split(","), csv[1].split(",")))
    assert values["driver_used_bytes"] == "n/a" and values["fenced_bytes"] == str(2 << 20)
    for key in controltable.CSV_HEADER:          # every column is a key of the JSON too
        assert key in ("time",) or key in row or key in d


class FakeProc(controlproc.Proc):
    def __init__(self, environ, maps=True, threads=(), argv=("prog",)):
        self.pid, self.comm, self.uid, self.tgid = 4242, "prog", 0, 4242
        self.environ, self.maps_has_shim, self.argv, self._threads = environ, maps, list(argv), threads

    def threads(self):
        return list(self._threads)


@pytest.mark.parametrize("proc, want", [
    (FakeProc({"CUDAPOOL_CONTROL": "1"}), "but has made no CUDA call yet: its socket opens at "
     "the first one; --timeout S waits for it"),
    (FakeProc({"CUDAPOOL_CONTROL": "1"}, threads=("prog", "cudapool-ctl")),
     "its control thread runs, but there is no socket in /d"),
    (FakeProc({}), "runs under the shim without CUDAPOOL_CONTROL: no control socket"),
    (FakeProc({"CUDAPOOL_CONTROL": "off"}), "with CUDAPOOL_CONTROL=off: no control socket"),
    (FakeProc({"CUDAPOOL_CONTROL": "maybe"}), "neither 1 nor a directory"),
    (FakeProc({"CUDAPOOL_CONTROL": "1", "CUDAPOOL_DISABLE": "1"}), "the shim is off"),
    (FakeProc({"CUDAPOOL_CONTROL": "/e"}), "its control directory is /e, not /d: give --dir /e"),
    (FakeProc({}, maps=False), "does not run under the shim (no libcudapool loaded)"),
    (FakeProc({"LD_PRELOAD": "/x/libcudapool.so"}, maps=False), "but did not load it"),
    (FakeProc({}, maps=False, argv=("bash", "/opt/bin/cudapool", "run", "--", "x")),
     "is the launcher `cudapool run`, and its program has no socket yet"),
])
def test_reasons(proc, want, monkeypatch):
    monkeypatch.setattr(controlproc.Proc, "control_directory", lambda self: (
        self.env("CUDAPOOL_CONTROL") if "/" in (self.env("CUDAPOOL_CONTROL") or "") else "/d"))
    assert want in controlproc.reason(proc, "/d")


@pytest.mark.parametrize("proc, want", [
    (None, "no process 4242"),
    (FakeProc({}), "process 4242 is uid 1001"),
    (FakeProc({"CUDAPOOL_CONTROL": "1"}), "but has made no CUDA call yet"),
])
def test_why_no_socket(proc, want, monkeypatch):
    if proc is not None and want.endswith("1001"):
        proc.uid = 1001
    elif proc is not None:
        proc.uid = controlproc.os.geteuid()
    monkeypatch.setattr(controlproc, "process", lambda pid: proc)
    monkeypatch.setattr(controlproc.Proc, "control_directory", lambda self: "/d")
    got = controlproc.why_no_socket(4242, "/d/4242.sock", "/d", waited=2.5)
    assert want in got and got.endswith("(waited 2.5 s)")


def test_thread_id(monkeypatch):
    proc = FakeProc({})
    proc.tgid = 4200
    monkeypatch.setattr(controlproc, "process", lambda pid: proc)
    assert controlproc.why_no_socket(4242, "/d/4242.sock", "/d") == (
        "4242 is a thread of process 4200: give 4200")
