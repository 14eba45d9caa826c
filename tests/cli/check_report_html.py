#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/cli/check_report_html.py: the checks of tests/cli/report_html.sh on a page written by
`cudapool report --html`. Standard library only; exits 1 with a message on the first failure.

  static PAGE
      the page is self-contained: no src/href/... to another place, no <link>/<img>/<iframe>, no
      fetch/XMLHttpRequest/WebSocket/EventSource/sendBeacon/import(), no url() or @import in its
      styles; its data block is JSON without a "<" (so nothing can end the <script> early)
  dom DOM STDERR REPORT_JSON CHARTS [REPLAY_REPORT_JSON]
      what headless Chromium left of the page (--dump-dom): its self-check is done; no error
      (window error/unhandledrejection, console.error/warn, nor a CONSOLE line in Chromium's
      log); exactly the charts named in CHARTS (comma-separated ids), each drawn (pixels other
      than the background) and, where it has data, with ink of its main colour; the peak figures
      shown equal `cudapool report --json`'s; so do the figures held over time shown (the card
      "Held over time", held.js: each device's mean allocated, mean reserved and time above the
      level, all devices' when there are several, the replay's for a log of requests only); each
      memory chart's highest point is the report's peak (bytes and time), the replay's chart that
      of the replayed log's report
  large PAGE REPORT_JSON MAX_BYTES
      a page of a long log: at most MAX_BYTES, every timeline downsampled to at most
      2 * 4 * 4096 + 2 points, its peaks still the report's
  clock PAGE [OFFSET_S,...]
      the charts' time axis: one log (no offsets given) counts from its first event (every
      timeline's offset_s 0); several logs count from the earliest start, each log's first event
      at its OFFSET_S on that axis, every timeline of the log (and of its replay) with it
  shows DOM STDERR TEXT...
      a page of logs that lie, end early or name many devices: its self-check is done, no error
      or console message, every chart drawn, and each TEXT in the DOM
  viewers PAGE DOM
      the page of tests/cli/fixtures/viewers.jsonl and viewers-rank1.jsonl: rank 1's frames
      named by library + offset from its summary's modules (its leak's symbol preferred), each
      site named by its first frame outside the runtime, and shown so in Chromium's DOM; rank 0
      (no modules) as before: bare addresses, focus 0
"""
import html
import json
import re
import sys

MAX_POINTS = 2 * 4 * 4096 + 2


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def data_block(text):
    m = re.search(r'<script type="application/json" id="cudapool-data">(.*?)</script>', text, re.S)
    if not m:
        fail("no data block")
    return m.group(1)


def static(path):
    text = open(path, encoding="utf-8").read()
    block = data_block(text)
    if "<" in block:
        fail("the data block holds a '<'")
    data = json.loads(block)
    if data.get("schema") != "cudapool.page/1":
        fail("data schema %r" % data.get("schema"))
    code = text.replace(block, "")
    m = re.search(r'\b(src|href|action|srcset|poster|data|formaction|xlink:href)\s*=\s*["\']?\s*'
                  r'(https?:|//|ftp:)', code, re.I)
    if m:
        fail("an address of another place: %r" % code[m.start():m.start() + 80])
    for tag in ("<link", "<img", "<iframe", "<object", "<embed", "<base", "<audio", "<video"):
        if tag in code.lower():
            fail("the page has a %s tag" % tag)
    if re.search(r"<script[^>]*\bsrc\s*=", code, re.I):
        fail("a <script src=...>")
    for word in ("fetch(", "XMLHttpRequest", "WebSocket", "EventSource", "sendBeacon", "import(",
                 "@import", "url("):
        if word in code:
            fail("the page has %r" % word)
    if "uPlot" not in code or "(v1.6.32)" not in code:
        fail("uPlot 1.6.32 is not inlined")
    return data


def selfcheck(dom):
    m = re.search(r'<pre id="cudapool-selfcheck"[^>]*data-done="1"[^>]*>(.*?)</pre>', dom, re.S)
    if not m:
        fail("the page did not finish its self-check (a script failed, or ran out of time)")
    return json.loads(html.unescape(m.group(1)))


def logs_of(report):
    return report["logs"] if "logs" in report else [report]


def finished(dom_text, stderr_path):
    """The page's self-check, once it is known to have finished without an error (in the page, or
    a CONSOLE line in Chromium's log)."""
    check = selfcheck(dom_text)
    if check["errors"]:
        fail("errors in the page: %s" % check["errors"])
    console = [l for l in open(stderr_path, encoding="utf-8", errors="replace")
               if ":CONSOLE" in l]
    if console:
        fail("console messages: %s" % console[:5])
    return check


def dom(dom_path, stderr_path, report_path, charts, replay_path=None):
    check = finished(open(dom_path, encoding="utf-8").read(), stderr_path)
    ids = [c["id"] for c in check["charts"]]
    want = [c for c in charts.split(",") if c]
    if sorted(ids) != sorted(want):
        fail("charts %s, expected %s" % (ids, want))
    for c in check["charts"]:
        if c["width"] < 400 or c["height"] < 20:
            fail("chart %s is %dx%d" % (c["id"], c["width"], c["height"]))
        if c["drawn"] < 1000:
            fail("chart %s is blank (%d pixels drawn)" % (c["id"], c["drawn"]))
        if c["expect_ink"] and c["ink"] < 50:
            fail("chart %s: its data is not drawn (%d pixels of its colour)" % (c["id"], c["ink"]))
    report = json.load(open(report_path))
    expected = []
    for li, rep in enumerate(logs_of(report)):
        for dev, dr in rep["devices"].items():
            for kind in ("allocated", "reserved"):
                p = dr["peak_" + kind]
                if p is not None:
                    expected.append((li, dev, kind, p["bytes"]))
    shown = [(p["log"], p["dev"], p["kind"], p["bytes"]) for p in check["peaks"]]
    if sorted(shown) != sorted(expected):
        fail("peaks shown %s, report --json %s" % (sorted(shown), sorted(expected)))
    held = sorted((h["log"], h["dev"], h["key"], h["value"]) for h in check["held"])
    if held != sorted(held_expected(report)):
        fail("held over time shown %s, report --json %s" % (held, sorted(held_expected(report))))
    replay = json.load(open(replay_path)) if replay_path else None
    tpeaks = {t["chart"]: t for t in check["timeline_peaks"]}
    for li, rep in enumerate(logs_of(report)):
        for dev, dr in rep["devices"].items():
            sources = [("log%d-dev%s-memory" % (li, dev), dr)]
            if replay is not None and li == 0:
                sources.append(("log%d-dev%s-replay-memory" % (li, dev),
                                logs_of(replay)[0]["devices"][dev]))
            for chart, figures in sources:
                t = tpeaks.get(chart)
                if t is None:
                    fail("no peaks read from chart %s" % chart)
                for kind in ("allocated", "reserved"):
                    p = figures["peak_" + kind]
                    want = None if p is None else {"bytes": p["bytes"], "time_s": p["time_s"]}
                    if t[kind] != want:
                        fail("chart %s: highest %s point %s, report --json %s"
                             % (chart, kind, t[kind], want))
    print("ok: %d charts drawn, %d peaks and %d figures held over time equal to the report's"
          % (len(ids), len(shown), len(held)))


def held_expected(report):
    """[(log, dev, key, value)] of the figures the card "Held over time" shows (page/held.js), from
    `cudapool report --json`: per device its mean allocated and mean reserved bytes and the time
    above the level (ns), "all" for all devices together when there are several, the replay's
    reserved figures (keys ending in _replayed) where a log of requests only has none; nothing for
    a log without a time span."""
    out = []
    for li, rep in enumerate(logs_of(report)):
        if not rep["held"]["span_s"]:
            continue
        replay = rep.get("replay") or {}
        parts = [(dev, dr["held"], (replay.get("devices") or {}).get(dev, {}).get("held"))
                 for dev, dr in rep["devices"].items()]
        if len(rep["devices"]) > 1:
            parts.append(("all", rep["held"], replay.get("held")))
        for dev, part, replayed in parts:
            a, r, suffix = part["allocated"], part["reserved"], ""
            if a is not None and a["mean"] is not None:
                out.append((li, dev, "mean_allocated", a["mean"]))
            if r is None and replayed and replayed["reserved"] is not None:
                r, suffix = replayed["reserved"], "_replayed"
            if r is not None:
                if r["mean"] is not None:
                    out.append((li, dev, "mean_reserved" + suffix, r["mean"]))
                out.append((li, dev, "above_ns" + suffix, r["above_ns"]))
    return out


def shows(dom_path, stderr_path, *texts):
    text = open(dom_path, encoding="utf-8").read()
    check = finished(text, stderr_path)
    blank = [c["id"] for c in check["charts"] if c["drawn"] < 1000]
    if blank:
        fail("charts not drawn: %s" % blank[:10])
    text = html.unescape(text)
    for t in texts:
        if t not in text:
            fail("the page lacks: %s" % t)
    print("ok: %d charts drawn, %d texts shown" % (len(check["charts"]), len(texts)))


def large(path, report_path, max_bytes):
    text = open(path, encoding="utf-8").read()
    size = len(text.encode("utf-8"))
    if size > int(max_bytes):
        fail("the page is %d bytes, more than %s" % (size, max_bytes))
    data = json.loads(data_block(text))
    rep = logs_of(json.load(open(report_path)))[0]
    tl, dr = data["logs"][0]["devices"]["0"]["timeline"], rep["devices"]["0"]
    if not tl["points"] <= MAX_POINTS or tl["points"] != len(tl["t"]):
        fail("%d points, more than %d" % (tl["points"], MAX_POINTS))
    if tl["exact"] or tl["changes"] <= tl["points"]:
        fail("the timeline was not downsampled (%d changes, %d points)"
             % (tl["changes"], tl["points"]))
    top = max(tl["allocated"])
    at = tl["t"][tl["allocated"].index(top)]
    p = dr["peak_allocated"]
    if (top, at) != (p["bytes"], p["time_s"]):
        fail("highest point %s at %s, report --json %s at %s"
             % (top, at, p["bytes"], p["time_s"]))
    said = "ok: %d bytes; the log's %d changes in %d points" % (size, tl["changes"], tl["points"])
    replay = data["logs"][0]["replay"]
    if replay is not None:
        tl = replay["devices"]["0"]["timeline"]
        if tl["points"] > MAX_POINTS or max(tl["reserved"]) != \
                replay["devices"]["0"]["peak_reserved"]["bytes"]:
            fail("the replay's timeline: %d points, highest %s" % (tl["points"],
                                                                 max(tl["reserved"])))
        said += ", the replay's %d in %d" % (tl["changes"], tl["points"])
    print(said)


def page_data(path):
    return json.loads(data_block(open(path, encoding="utf-8").read()))


def timelines(log):
    for d in log["devices"].values():
        if d["timeline"]:
            yield d["timeline"]
    for d in (log["replay"] or {}).get("devices", {}).values():
        if d["timeline"]:
            yield d["timeline"]


def clock(path, offsets=None):
    data = page_data(path)
    c = data["clock"]
    if offsets is None:   # one log, or runs far apart in time: each from its first event
        if c["zero"] != "first event" or c["range"] is not None:
            fail("one log: the axis %s" % c)
        if len(data["logs"]) > 1 and not any("far apart" in n for n in c["notes"]):
            fail("runs apart in time: no note says why each chart has its own axis: %s" % c)
        want = [0.0] * len(data["logs"])
    else:
        want = [float(x) for x in offsets.split(",")]
        if c["zero"] != "earliest start" or c["range"][0] != 0.0:
            fail("several logs: the axis %s" % c)
    got = [l["clock"]["offset_s"] for l in data["logs"]]
    if len(got) != len(want) or any(abs(a - b) > 1e-9 for a, b in zip(got, want)):
        fail("first events at %s on the axis, expected %s" % (got, want))
    for l, off in zip(data["logs"], want):
        for tl in timelines(l):
            if abs(tl["offset_s"] - off) > 1e-9 or (c["range"] and not
                                                    c["range"][0] <= off + tl["t"][-1]
                                                    <= c["range"][1]):
                fail("%s: a timeline at %s, its log at %s (axis %s)"
                     % (l["log"], tl["offset_s"], off, c["range"]))
    print("ok: the time axis from the %s, first events at %s" % (c["zero"], got))


def viewers(path, dom_path):
    data = page_data(path)
    rank0, rank1 = data["logs"]
    s = rank1["sites"]
    named = sorted(frames[at] for frames, at in zip(s["frames"], s["focus"]))
    want = ["0x401234 python3.11+0x1234",          # the stack whose 2nd frame is in no module
            "0x7f00d0003000 libtorch_cuda.so(empty_cuda+0x30)",  # the leak's symbol
            "0x7f00d002a1c0 libtorch_cuda.so+0x2a1c0"]
    if named != want:
        fail("rank 1's sites named %s, expected %s" % (named, want))
    if ["0x7f00c00146f3 libcudart.so.13+0x146f3", "0x7f00e0001000",
            "0x401234 python3.11+0x1234"] not in s["frames"]:
        fail("rank 1's frames: %s" % s["frames"])
    g = rank1["leaks"]["groups"]
    if [x["backtrace"] for x in g] != [["0x7f00c0002000 libcudart.so.13+0x2000",   # "?+0x2000"
                                        "0x7f00d0003000 libtorch_cuda.so(empty_cuda+0x30)"]] \
            or g[0]["focus"] != 1:
        fail("rank 1's leak stacks: %s" % g)
    s0 = rank0["sites"]
    if s0["frames"] != [["0x7f00aa001000", "0x7f00aa002000"], ["0x7f00aa003000"],
                        ["0x7f00bb000100"]] or s0["focus"] != [0, 0, 0]:
        fail("rank 0 (no modules): sites %s" % s0)
    dom = html.unescape(open(dom_path, encoding="utf-8").read())
    for label in ["frame 1: " + want[2], "frame 1: " + want[1], "frame 2: " + want[0]]:
        if "<code>%s</code>" % label not in dom:
            fail("the page does not show the site %r" % label)
    print("ok: frames named by library + offset, %d sites" % len(s["frames"]))


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    if what == "static":
        static(*args)
        print("ok: self-contained")
    elif what == "dom":
        dom(*args)
    elif what == "shows":
        shows(*args)
    elif what == "large":
        large(*args)
    elif what == "clock":
        clock(*args)
    elif what == "viewers":
        viewers(*args)
    else:
        fail("unknown check %s" % what)
