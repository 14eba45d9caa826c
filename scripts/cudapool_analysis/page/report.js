// SPDX-License-Identifier: Apache-2.0
/* cudapool report --html: draws the page from the JSON in #cudapool-data (htmlreport.py writes
   it; pagedata.py says what it holds). Timelines with uPlot (inlined before this script), the
   segment maps on canvases of their own, tables as DOM nodes (text only: nothing from the log is
   ever parsed as HTML). Several logs' charts share one time axis (DATA.clock: since the earliest
   start, each timeline moved by its offset_s); frames arrive named (frames.py). When everything
   is drawn it writes a self-check into #cudapool-selfcheck (errors, whether each chart has ink,
   the peak figures shown, the figures held over time shown) for tests/cli/report_html.sh. The
   card "Held over time" is held.js's (inlined before this script).
   Not here: any figure that is not in the data (the Python side computes them all). */
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("cudapool-data").textContent);
  var COLORS = {
    allocated: "#2563eb", active: "#0d9488", reserved: "#7c3aed", unallocated: "#d97706",
    fenced: "#f97316", free: "#e5e7eb", oom: "#dc2626", empty_cache: "#64748b",
    segment_refused: "#db2777"
  };
  // The figures' words (vocabulary.py FIGURE_WORDS, docs/report.md "Words and figures").
  var WORDS = DATA.words;
  var MARK_NAMES = { oom: "out of memory", empty_cache: "empty_cache", segment_refused: "segment refused" };
  var check = { errors: window.cudapoolErrors || [], charts: [], peaks: [], timeline_peaks: [] };
  // The charts' time axis (pagedata.one_clock): one log, from its first event; several, from the
  // earliest start among them on the wall clock, each timeline placed by its offset_s.
  var CLOCK = DATA.clock || { zero: "first event", range: null, notes: [] };
  var CLOCK_RANGE = CLOCK.range;
  var AXIS_LABEL = CLOCK.zero === "earliest start" ? "time since the earliest start of the " + DATA.logs.length + " logs (wall clock)" : "time since the first event";
  var charts = [];      // {kind, u or redraw, canvas, ink colour, id}
  var tip = document.getElementById("tip");

  // ---- formatting ------------------------------------------------------------------------------
  var UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
  // A figure no device can have (negative, or 2^64 bytes or more: report.py's impossible()):
  // named, never written as a size. (JSON numbers past 2^53 arrive rounded: the last 2048 below
  // 2^64 round up to it, and are named so too.)
  function impossible(n) { return typeof n === "number" && (n < 0 || n >= 18446744073709551616); }
  function bytes(n) {
    if (n === null || n === undefined) return "–";
    if (impossible(n)) return "impossible";
    var x = Math.abs(n), u = 0;
    while (x >= 1024 && u < 6) { x /= 1024; u++; }
    if (u === 0) return n + " B";
    var s = x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x.toFixed(2);
    return (n < 0 ? "-" : "") + s + " " + UNITS[u];
  }
  function axisBytes(n) {
    if (n === 0) return "0";
    var x = Math.abs(n), u = 0;
    while (x >= 1024 && u < 6) { x /= 1024; u++; }
    return (n < 0 ? "-" : "") + String(+x.toFixed(2)) + " " + UNITS[u];
  }
  function count(n) { return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US"); }
  function secs(t) {
    if (t === null || t === undefined) return "–";
    var a = Math.abs(t);
    if (a === 0) return "0 s";
    if (a < 1e-3) return +(t * 1e6).toFixed(3) + " µs";
    if (a < 1) return +(t * 1e3).toFixed(3) + " ms";
    if (a < 600) return +t.toFixed(3) + " s";
    return Math.floor(t / 60) + " min " + (t % 60).toFixed(0) + " s";
  }
  function fraction(x) { return x === null || x === undefined ? "impossible (its figures are)" : x.toFixed(4); }
  function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + " %"; }
  function base(path) { var p = String(path); return p.slice(p.lastIndexOf("/") + 1); }
  var BYTE_INCRS = [];
  for (var k = 0; k < 7; k++) {
    for (var m = 1; m < 1024; m *= 2) BYTE_INCRS.push(m * Math.pow(1024, k));
  }
  function timeTicks(u, splits, axisIdx, space, incr) {
    var unit = incr < 1e-6 ? [1e9, " ns"] : incr < 1e-3 ? [1e6, " µs"] : incr < 1 ? [1e3, " ms"] : [1, " s"];
    var step = incr * unit[0], dec = step >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(step)));
    return splits.map(function (v) { return v === 0 ? "0" : (v * unit[0]).toFixed(dec) + unit[1]; });
  }

  // ---- DOM -------------------------------------------------------------------------------------
  function el(tag, attrs) {
    var e = document.createElement(tag);
    if (attrs) for (var a in attrs) {
      if (attrs[a] === null || attrs[a] === undefined) continue;
      if (a === "text") e.textContent = attrs[a]; else e.setAttribute(a, attrs[a]);
    }
    for (var i = 2; i < arguments.length; i++) add(e, arguments[i]);
    return e;
  }
  function add(e, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(e, x); }); return; }
    e.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
  function table(headers, rows, numeric) {
    var t = el("table", null, el("thead", null, el("tr", null, headers.map(function (h, i) {
      return el("th", { class: numeric && numeric[i] ? "num" : null, text: h });
    }))));
    var body = el("tbody");
    rows.forEach(function (r) {
      var tr = el("tr", r.attrs || null);
      (r.cells || r).forEach(function (c, i) {
        if (c && c.td) { tr.appendChild(c.td); return; }
        tr.appendChild(el("td", { class: numeric && numeric[i] ? "num" : null }, c));
      });
      body.appendChild(tr);
    });
    t.appendChild(body);
    return t;
  }
  function bytesCell(n, attrs) {   // human figure, exact count below
    var td = el("td", Object.assign({ class: "num" }, attrs || {}), bytes(n));
    if (n !== null && n !== undefined && !impossible(n)) td.appendChild(el("span", { class: "bytes-exact", text: count(n) + " B" }));
    return { td: td };
  }
  function bytesShort(n) {   // human figure, exact count on hover
    return { td: el("td", { class: "num", title: n === null || n === undefined ? null : count(n) + " B" }, bytes(n)) };
  }
  function note(text, kind) { return el("div", { class: "note " + (kind || "") }, text); }
  function kv(pairs) {
    var dl = el("dl", { class: "kv" });
    pairs.forEach(function (p) { if (p) { dl.appendChild(el("dt", { text: p[0] })); dl.appendChild(el("dd", null, p[1])); } });
    return dl;
  }
  // A site's frames are readable texts already (frames.py: library + offset, or the symbol the
  // summary line's leaks give; a bare address where neither is known). A Python site's frames
  // are its Python stack ("file:line function", innermost first), named by its first frame of
  // the program's own (not the standard library's or an installed package's).
  function siteView(log, site) {
    if (site === null || site === undefined || site < 0) return el("span", { class: "muted", text: "(no backtrace)" });
    var at = (log.sites.focus && log.sites.focus[site]) || 0;
    var view = framesView(log.sites.frames[site] || [], at);
    if (!(log.sites.python && log.sites.python[site])) return view;
    return el("span", null, el("span", { class: "muted", text: "Python " }), view);
  }
  // A stack: its naming frame (the first outside the CUDA runtime, cudapool and PyTorch's
  // allocator: sites.py focus()), the whole stack on opening, innermost first.
  function framesView(frames, at) {
    if (!frames.length) return el("code", { text: "(empty)" });
    at = at || 0;
    var label = (at > 0 ? "frame " + at + ": " : "") + frames[at];
    if (frames.length < 2) return el("code", { text: label });
    return el("details", null, el("summary", null, el("code", { text: label }), " (" + frames.length + " frames)"),
      el("pre", { class: "frames", text: frames.map(function (f, i) { return (i === at ? "> " : "  ") + f; }).join("\n") }));
  }
  function stackView(frames, at) {
    if (!frames || !frames.length) return el("span", { class: "muted", text: "(no backtrace)" });
    return framesView(frames, at);
  }

  // ---- timelines (uPlot) -----------------------------------------------------------------------
  function withAlpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16) + "," + ((n >> 8) & 255) + "," + (n & 255) + "," + a + ")";
  }
  function innerWidth(box) {   // the content box: clientWidth less the padding
    var cs = window.getComputedStyle(box);
    return (box.clientWidth || 1200) - parseFloat(cs.paddingLeft || 0) - parseFloat(cs.paddingRight || 0);
  }
  function chartWidth(box) { return Math.max(480, Math.floor(innerWidth(box))); }
  var syncGroups = {};
  function timeline(box, spec) {
    // spec: {id, title, help, x, series: [{label, color, values, fill, dash}], peaks: [{label, color, t, v}], marks, height, group}
    var wrap = el("div", { class: "chart", id: spec.id });
    wrap.appendChild(el("div", { class: "chart-title", text: spec.title }));
    if (spec.help) wrap.appendChild(el("div", { class: "chart-help", text: spec.help }));
    var target = el("div");
    wrap.appendChild(target);
    box.appendChild(wrap);
    var stepped = uPlot.paths.stepped({ align: 1 });
    var series = [{ label: "time", value: function (u, v) { return v === null || v === undefined ? "–" : secs(v); } }];
    spec.series.forEach(function (s) {
      series.push({
        label: s.label, stroke: s.color, width: s.width || 1.6, dash: s.dash || undefined,
        fill: s.fill ? withAlpha(s.color, s.fill) : undefined, paths: stepped, points: { show: false },
        value: function (u, v) { return v === null || v === undefined ? "–" : bytes(v); }
      });
    });
    var data = [spec.x].concat(spec.series.map(function (s) { return s.values; }));
    if (CLOCK_RANGE) {   // several logs: every chart shows the same span of the one time axis
      data = [[CLOCK_RANGE[0]].concat(spec.x, [CLOCK_RANGE[1]])].concat(spec.series.map(function (s) { return [null].concat(s.values, [null]); }));
    }
    var ymax = 0;
    spec.series.forEach(function (s) { s.values.forEach(function (v) { if (v > ymax) ymax = v; }); });
    var group = syncGroups[spec.group] = syncGroups[spec.group] || [];
    var syncing = false;
    var opts = {
      width: chartWidth(box), height: spec.height || 300,
      scales: { x: { time: false }, y: { range: function (u, lo, hi) { return [0, (hi > 0 ? hi : 1) * 1.12]; } } },
      axes: [
        { values: timeTicks, size: 46, label: AXIS_LABEL, labelSize: 18, labelFont: "12px system-ui, sans-serif", font: "12px system-ui, sans-serif", grid: { stroke: "#eef0f3" } },
        { values: function (u, splits) { return splits.map(axisBytes); }, incrs: BYTE_INCRS, size: 80, space: 32, font: "12px system-ui, sans-serif", grid: { stroke: "#eef0f3" } }
      ],
      series: series,
      cursor: { drag: { x: true, y: false }, sync: { key: spec.group } },
      legend: { live: true },
      hooks: {
        draw: [function (u) { drawMarks(u, spec); }],
        setScale: [function (u, key) {
          if (key !== "x" || syncing) return;
          syncing = true;
          group.forEach(function (o) {
            if (o !== u && (o.scales.x.min !== u.scales.x.min || o.scales.x.max !== u.scales.x.max))
              o.setScale("x", { min: u.scales.x.min, max: u.scales.x.max });
          });
          syncing = false;
        }]
      }
    };
    var u = new uPlot(opts, data, target);
    group.push(u);
    var marked = Object.keys(spec.marks || {}).filter(function (a) { return spec.marks[a].length; });
    if (marked.length) {
      wrap.appendChild(el("div", { class: "segmap-bar", style: "justify-content:center" }, "dashed lines:", marked.map(function (a) {
        return el("span", null, el("span", { class: "swatch", style: "background:" + (COLORS[a] || "#64748b") }),
          MARK_NAMES[a] + " (" + count(spec.marks[a].length) + ")");
      })));
    }
    charts.push({ id: spec.id, kind: "timeline", u: u, canvas: u.ctx.canvas, ink: spec.series[spec.series.length - 1].color, box: box, expect_ink: ymax > 0 });
    return u;
  }
  function drawMarks(u, spec) {
    var c = u.ctx, px = uPlot.pxRatio || 1;
    var xmin = u.scales.x.min, xmax = u.scales.x.max, top = u.bbox.top, bottom = u.bbox.top + u.bbox.height;
    c.save();
    Object.keys(spec.marks || {}).forEach(function (action) {
      c.strokeStyle = COLORS[action] || "#64748b";
      c.lineWidth = 1.5 * px;
      c.setLineDash([5 * px, 4 * px]);
      spec.marks[action].forEach(function (t) {
        if (t < xmin || t > xmax) return;
        var x = Math.round(u.valToPos(t, "x", true)) + 0.5;
        c.beginPath(); c.moveTo(x, top); c.lineTo(x, bottom); c.stroke();
      });
    });
    c.setLineDash([]);
    c.font = (12 * px) + "px system-ui, sans-serif";
    c.textAlign = "left";
    (spec.peaks || []).forEach(function (p, i) {
      if (p.t === null || p.t === undefined || p.t < xmin || p.t > xmax) return;
      var x = u.valToPos(p.t, "x", true), y = u.valToPos(p.v, "y", true);
      c.beginPath(); c.arc(x, y, 4.5 * px, 0, 2 * Math.PI);
      c.fillStyle = "#fff"; c.fill(); c.lineWidth = 2.2 * px; c.strokeStyle = p.color; c.stroke();
      var text = p.text || p.label + " " + bytes(p.v) + " at " + secs(p.t);
      var w = c.measureText(text).width + 8 * px, h = 17 * px;
      var lx = x + 8 * px + w > u.bbox.left + u.bbox.width ? x - 8 * px - w : x + 8 * px;
      var ly = p.below ? y + 6 * px : y - 6 * px - h;
      if (ly < top) ly = y + 6 * px;
      if (ly + h > bottom) ly = y - 6 * px - h;
      c.fillStyle = "rgba(255,255,255,0.9)"; c.fillRect(lx, ly, w, h);
      c.strokeStyle = p.color; c.lineWidth = 1 * px; c.strokeRect(lx, ly, w, h);
      c.fillStyle = "#111827"; c.textBaseline = "middle"; c.fillText(text, lx + 4 * px, ly + h / 2);
    });
    c.restore();
  }
  function firstMax(xs, ys) {
    if (!ys) return null;
    var best = -1;
    for (var i = 0; i < ys.length; i++) if (best < 0 || ys[i] > ys[best]) best = i;
    return best < 0 ? null : { bytes: ys[best], time_s: xs[best] };
  }
  function timelineHelp(tl) {
    var how = tl.exact ? "every one of its " + count(tl.changes) + " changes drawn"
      : count(tl.changes) + " changes drawn as " + count(tl.points) + " points (lowest and highest per " + secs(tl.bucket_s) + "; peaks exact)";
    return "Drag across the chart to zoom in, double-click to zoom out; " + how + ".";
  }
  function memoryCharts(box, tl, dev, id, group, what) {
    // times on the page's axis: the timeline's own (since its log's first event, the report's)
    // moved by its offset_s; the self-check reads the peaks on the timeline's own times
    var off = tl.offset_s || 0;
    var at = function (t) { return t === null || t === undefined ? t : t + off; };
    var xs = off ? tl.t.map(at) : tl.t;
    var marks = {};
    Object.keys(tl.marks || {}).forEach(function (a) { marks[a] = tl.marks[a].map(at); });
    // drawn in this order: allocated last, on top of the others (active is often the same)
    var series = [];
    if (tl.reserved) series.push({ label: "reserved", color: COLORS.reserved, values: tl.reserved, fill: 0.06, width: 1.8 });
    if (tl.active) series.push({ label: "active (allocated + fenced)", color: COLORS.active, values: tl.active, dash: [6, 3], width: 1.3 });
    series.push({ label: "allocated", color: COLORS.allocated, values: tl.allocated, fill: 0.10 });
    var peaks = [];
    if (dev.peak_reserved && tl.reserved) peaks.push({ label: "peak reserved", color: COLORS.reserved, t: at(dev.peak_reserved.time_s), v: dev.peak_reserved.bytes });
    if (dev.peak_allocated) peaks.push({ label: "peak allocated", color: COLORS.allocated, t: at(dev.peak_allocated.time_s), v: dev.peak_allocated.bytes, below: !!tl.reserved });
    var names = series.map(function (s) { return s.label.split(" ")[0]; }).reverse();
    var title = what + (names.length > 1 ? names.slice(0, -1).join(", ") + " and " + names[names.length - 1] : names[0]) + " bytes over time";
    timeline(box, { id: id + "-memory", title: title, help: timelineHelp(tl), x: xs, series: series, peaks: peaks, marks: marks, group: group });
    check.timeline_peaks.push({ chart: id + "-memory", allocated: firstMax(tl.t, tl.allocated), reserved: firstMax(tl.t, tl.reserved), offset_s: off });
    if (!tl.reserved) return;
    var un = tl.reserved.map(function (r, i) { return r - tl.allocated[i]; });
    var fpeaks = [], f = dev.fragmentation, most = firstMax(xs, un);
    if (f) fpeaks.push({ text: bytes(f.reserved - f.allocated) + " unallocated at the reserved peak (" + secs(at(f.time_s)) + "): " + bytes(f.fenced) + " " + WORDS.fenced + ", " + bytes(f.free_cached) +
      " free; fragmentation " + (f.fragmentation === null ? "impossible" : f.fragmentation.toFixed(2)),
      color: COLORS.unallocated, t: at(f.time_s), v: f.reserved - f.allocated });
    else if (most && most.bytes > 0) fpeaks.push({ label: "most unallocated", color: COLORS.unallocated, t: most.time_s, v: most.bytes });
    timeline(box, { id: id + "-unallocated", height: 190, title: what + "reserved but unallocated (fenced and free)",
      help: "reserved − allocated: memory the pool holds that the program does not; where no free block is large enough for a request, this is fragmentation.",
      x: xs, series: [{ label: "reserved − allocated", color: COLORS.unallocated, values: un, fill: 0.22 }], peaks: fpeaks, marks: marks, group: group });
  }

  // ---- segment maps (canvas) -------------------------------------------------------------------
  var ROW = 18, GAP = 5, PAD = 8, LABEL = 210;
  function segmentMap(box, snap, log, id, title, fromReplay) {
    var wrap = el("div", { class: "chart", id: id });
    wrap.appendChild(el("div", { class: "chart-title", text: title }));
    box.appendChild(wrap);
    var regions = snap.region_list || [];
    var free = snap.reserved - snap.allocated - snap.fenced;
    wrap.appendChild(el("div", { class: "chart-help", text:
      count(snap.regions) + " region" + (snap.regions === 1 ? "" : "s") + " (segments and runs of mapped pages), " + bytes(snap.reserved) + " reserved: " +
      bytes(snap.allocated) + " allocated, " + bytes(snap.fenced) + " fenced (" + WORDS.fenced + "), " + bytes(free) + " free, in " + count(snap.blocks) + " blocks." +
      (snap.shown < snap.regions ? " The " + snap.shown + " largest regions are drawn." : "") +
      (snap.outside ? " " + count(snap.outside) + " blocks lie outside every region (the log is inconsistent)." : "") +
      " Hover over a block for its size and allocation site." }));
    if (!regions.length) { wrap.appendChild(note("No segment is reserved at this point.", "info")); return; }
    var maxSize = 0, minSize = Infinity;
    regions.forEach(function (r) { maxSize = Math.max(maxSize, r.size); minSize = Math.min(minSize, r.size); });
    var mode = maxSize / minSize > 64 ? "full" : "proportional";
    var select = el("select", null, el("option", { value: "proportional", text: "bar length proportional to segment size" }),
      el("option", { value: "full", text: "every segment full width" }));
    select.value = mode;
    var legend = el("div", { class: "segmap-bar" },
      el("span", null, el("span", { class: "swatch", style: "background:" + COLORS.allocated }), "allocated"),
      el("span", null, el("span", { class: "swatch", style: "background:" + COLORS.fenced }), "fenced (" + WORDS.fenced + ": not free)"),
      el("span", null, el("span", { class: "swatch", style: "background:" + COLORS.free }), "free (cached)"),
      el("label", null, "scale: ", select));
    wrap.appendChild(legend);
    var scroll = el("div", { class: "segmap-wrap" });
    var canvas = el("canvas");
    scroll.appendChild(canvas);
    wrap.appendChild(scroll);
    var W = 0;
    function barLen(r) {
      var avail = W - LABEL - 130;
      return mode === "full" ? avail : Math.max(6, avail * r.size / maxSize);
    }
    function draw() {
      W = Math.max(640, Math.floor(innerWidth(scroll)) - 2);
      var H = PAD * 2 + regions.length * (ROW + GAP), dpr = window.devicePixelRatio || 1;
      canvas.width = Math.round(W * dpr); canvas.height = Math.round(H * dpr);
      canvas.style.width = W + "px"; canvas.style.height = H + "px";
      var c = canvas.getContext("2d");
      c.setTransform(dpr, 0, 0, dpr, 0, 0);
      c.fillStyle = "#ffffff"; c.fillRect(0, 0, W, H);
      c.textBaseline = "middle";
      regions.forEach(function (r, i) {
        var y = PAD + i * (ROW + GAP), len = barLen(r);
        c.font = "12px ui-monospace, Menlo, Consolas, monospace"; c.fillStyle = "#374151";
        c.fillText(r.at, 8, y + ROW / 2);
        c.font = "12px system-ui, sans-serif"; c.textAlign = "right";
        c.fillText(bytes(r.size), LABEL - 10, y + ROW / 2); c.textAlign = "left";
        c.fillStyle = COLORS.free; c.fillRect(LABEL, y, len, ROW);
        if (r.blocks) {
          r.blocks.forEach(function (b) {
            // whole pixels, at least one (a small block stays visible), a gap between neighbours
            var x0 = Math.floor(LABEL + b[0] / r.size * len), x1 = Math.round(LABEL + (b[0] + b[1]) / r.size * len);
            c.fillStyle = b[2] ? COLORS.fenced : COLORS.allocated;
            c.fillRect(x0, y, x1 - x0 > 4 ? x1 - x0 - 1 : Math.max(1, x1 - x0), ROW);
          });
        } else {   // over the budget: the totals only
          var a = r.allocated / r.size * len, f = r.fenced / r.size * len;
          c.fillStyle = COLORS.allocated; c.fillRect(LABEL, y, a, ROW);
          c.fillStyle = COLORS.fenced; c.fillRect(LABEL + a, y, f, ROW);
        }
        c.strokeStyle = "#94a3b8"; c.lineWidth = 1; c.strokeRect(LABEL + 0.5, y + 0.5, len - 1, ROW - 1);
        c.fillStyle = "#6b7280"; c.font = "11.5px system-ui, sans-serif";
        c.fillText(pct(r.allocated / r.size) + " allocated", LABEL + len + 8, y + ROW / 2);
      });
    }
    select.addEventListener("change", function () { mode = select.value; draw(); });
    canvas.addEventListener("mousemove", function (e) {
      var rect = canvas.getBoundingClientRect(), x = e.clientX - rect.left, y = e.clientY - rect.top;
      var i = Math.floor((y - PAD) / (ROW + GAP)), r = regions[i];
      if (!r || y - PAD - i * (ROW + GAP) > ROW) { hideTip(); return; }
      var len = barLen(r);
      if (x < LABEL || x > LABEL + len) { showTip(e, regionText(r, fromReplay)); return; }
      showTip(e, regionText(r, fromReplay).concat(blockText(log, r, (x - LABEL) / len * r.size, r.size / len)));
    });
    canvas.addEventListener("mouseleave", hideTip);
    draw();
    charts.push({ id: id, kind: "segmap", redraw: draw, canvas: canvas, ink: COLORS.allocated, box: box, background: [255, 255, 255],
      expect_ink: snap.allocated > 0 });
  }
  function addHex(h, off) { return "0x" + (BigInt(h) + BigInt(Math.round(off))).toString(16); }
  function regionText(r, fromReplay) {
    var out = [el("div", null, el("b", { text: (r.at === r.segment ? "segment " : "mapped pages of segment " + r.segment + " from ") + r.at }), "  " + bytes(r.size)),
      el("div", { text: count(r.count) + " blocks: " + bytes(r.allocated) + " allocated, " + bytes(r.fenced) + " fenced; largest free range " + bytes(r.largest_free) })];
    if (fromReplay) out.push(el("div", { class: "muted", text: "(as replayed by the pool)" }));
    return out;
  }
  function blockText(log, r, off, slack) {
    if (!r.blocks) return [el("div", { class: "muted", text: "(blocks not listed: over the page's budget)" })];
    var bs = r.blocks, lo = 0, hi = bs.length - 1, at = -1;
    while (lo <= hi) { var mid = (lo + hi) >> 1; if (bs[mid][0] <= off) { at = mid; lo = mid + 1; } else hi = mid - 1; }
    var b = at >= 0 && off < bs[at][0] + bs[at][1] + slack ? bs[at] : null;
    if (!b && at + 1 < bs.length && bs[at + 1][0] - off < slack) b = bs[at + 1];
    if (!b) {
      var start = at >= 0 ? bs[at][0] + bs[at][1] : 0, end = at + 1 < bs.length ? bs[at + 1][0] : r.size;
      return [el("div", { style: "margin-top:4px" }, el("b", { text: "free " + bytes(end - start) }), " at " + addHex(r.at, start) + " (" + count(end - start) + " B)")];
    }
    var out = [el("div", { style: "margin-top:4px" }, el("b", { text: (b[2] ? "fenced block " : "allocated block ") + bytes(b[1]) }),
      " at " + addHex(r.at, b[0]) + "  (" + count(b[1]) + " B, requested " + count(b[3]) + " B" + (b[4] !== null ? ", seq " + b[4] : "") + ")")];
    if (b[2]) out.push(el("div", { class: "muted", text: "freed by the program, not yet reusable (its free_completed has not come)" }));
    if (b[5] >= 0 && log.sites.frames[b[5]]) {
      out.push(el("div", { class: "frames", text: log.sites.frames[b[5]].join("\n") }));
    }
    return out;
  }
  function showTip(e, nodes) {
    tip.textContent = "";
    add(tip, nodes);
    tip.hidden = false;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    var x = e.clientX + 16, y = e.clientY + 16;
    if (x + w > window.innerWidth - 8) x = e.clientX - w - 16;
    if (y + h > window.innerHeight - 8) y = e.clientY - h - 16;
    tip.style.left = Math.max(4, x) + "px"; tip.style.top = Math.max(4, y) + "px";
  }
  function hideTip() { tip.hidden = true; }

  // ---- sections --------------------------------------------------------------------------------
  function logTitle(log) {
    var h = log.run.host ? " · " + log.run.host : "";
    return (DATA.logs.length > 1 ? "Rank " + log.rank + h + " · " : "") + base(log.log);
  }
  function runCard(log) {
    var r = log.run;
    var devs = (r.devices || []).map(function (d) { return "device " + d.id + ": " + (d.name || "?") + ", " + bytes(d.total_memory); });
    var actions = Object.keys(r.actions || {}).map(function (a) { return a + " " + count(r.actions[a]); }).join(", ");
    var opts = r.options ? Object.keys(r.options).map(function (k) { return k + "=" + JSON.stringify(r.options[k]); }).join(", ") : null;
    var end = r.ending || {};
    // A log of requests only has no summary line by construction: no verdict of a kill.
    var status = el("span", null, end.summary === "read" ? el("span", { class: "pill ok", text: "exited normally (summary line)" })
      : end.requests_only ? el("span", { class: "pill", text: "not recorded (a log of requests only)" })
      : el("span", { class: "pill bad", text: end.summary === "too long" ? "summary line too long to read" : "no summary line" }),
      end.summary === "read" ? null : " " + end.text.replace(/^no summary line(: |, )/, ""));
    var hits = r.cache_hits === null
      ? "unknown (the log records no pool decisions)" + (log.replay && log.replay.cache_hits !== undefined ? "; as replayed: " + count(log.replay.cache_hits) + " of " + count(r.allocs) : "")
      : count(r.cache_hits) + " of " + count(r.allocs) + " allocations";
    return el("div", { class: "card grid2" }, kv([
      ["log", el("code", { text: log.log })],
      ["executable", el("code", { text: r.executable || "?" })],
      r.argv && r.argv.length ? ["arguments", el("code", { text: r.argv.join(" ") })] : null,
      ["host, pid", (r.host || "?") + ", pid " + (r.pid === null || r.pid === undefined ? "?" : r.pid)],
      ["rank", log.rank + (log.rank_from === "header" ? " (from the log's header)" : " (the log's place in the order given: the header names none)")],
      ["started", r.start_time || "(not in the header)"],
      ["duration", secs(r.duration_s) + " from the first event to the last" + (CLOCK_RANGE && log.clock ? "; the first event at " + secs(log.clock.offset_s) + " on the charts' axis" : "")],
      ["exit", status]
    ]), kv([
      ["settings", r.conf ? el("code", { text: r.conf }) : "(none: the defaults)", r.conf_source ? " from " + r.conf_source : ""],
      opts ? ["options", el("code", { class: "small", text: opts })] : null,
      ["devices", devs.length ? devs.join("; ") : "?"],
      ["lines, events", count(r.lines) + " lines, " + count(r.events) + " events"],
      ["event counts", actions || "none"],
      r.allocs ? ["cache hits", hits] : null,
      r.malformed_lines ? ["malformed lines", count(r.malformed_lines) + " skipped"] : null,
      cudapoolVersion(r)
    ]));
  }
  function cudapoolVersion(r) { return r.version ? ["written by", "cudapool " + r.version] : null; }
  function peaksTable(log, li) {
    var rows = Object.keys(log.devices).map(function (dev) {
      var d = log.devices[dev], pa = d.peak_allocated, pr = d.peak_reserved, f = d.fragmentation;
      var attrs = function (kind, p) { return p ? { "data-peak": kind, "data-log": li, "data-dev": dev, "data-bytes": p.bytes } : {}; };
      // A log of requests only: the figures it cannot have, as replayed (report --json's "replay").
      var rd = log.replay && log.replay.devices[dev], rp = !pr && rd ? rd.peak_reserved : null, rf = !f && rd ? rd.fragmentation : null;
      var ff = f || rf, as = rf ? " (as replayed)" : "";
      return [dev,
        bytesCell(pa ? pa.bytes : null, attrs("allocated", pa)), pa ? secs(pa.time_s) + " (seq " + pa.seq + ")" : "no alloc events",
        rp ? bytesCell(rp.bytes, { "data-replayed": "reserved", "data-log": li, "data-dev": dev, "data-bytes": rp.bytes }) : bytesCell(pr ? pr.bytes : null, attrs("reserved", pr)),
        pr ? secs(pr.time_s) + " (seq " + pr.seq + ")" : rp ? secs(rp.time_s) + " as replayed (the log has no segment events)" : "no segment events",
        ff ? bytesCell(ff.fenced) : "–", ff ? bytesCell(ff.free_cached) : "–", ff ? bytesCell(ff.largest_free_block) : "–", ff ? fraction(ff.fragmentation) + as : "–"];
    });
    var replayed = log.replay ? Object.keys(log.replay.devices).map(function (dev) {
      var d = log.replay.devices[dev], p = d.peak_reserved, f = d.fragmentation;
      return p ? note("As replayed by the pool (this log has no pool decisions), device " + dev + ": peak reserved " + bytes(p.bytes) +
        " at " + secs(p.time_s) + (f ? ", with " + bytes(f.fenced) + " fenced, " + bytes(f.free_cached) + " free and fragmentation " + fraction(f.fragmentation) : "") + ".", "info") : null;
    }) : null;
    return el("div", { class: "card" }, replayed, table(["device", "peak allocated", "when", "peak reserved", "when",
      "fenced at the reserved peak (" + WORDS.fenced + ")", "free at the reserved peak", "largest free block", "fragmentation"], rows,
      [false, true, false, true, false, true, true, true, true]),
      el("div", { class: "chart-help", style: "margin-top:6px", text: "Peaks as `cudapool report` finds them from the events: the first time each is reached, " +
        "counted from the log's first event" + (CLOCK_RANGE && log.clock ? " (on the charts, whose axis counts from the earliest start of the logs, the first event is at " + secs(log.clock.offset_s) + ")" : "") +
        ". Fenced bytes wait for work on another stream and are not free: free = reserved − allocated − fenced; fragmentation = 1 − largest free block / free, at the reserved peak." }));
  }
  function deviceSection(sec, log, li, dev) {
    var d = log.devices[dev];
    var head = "Device " + dev + (d.name ? " · " + d.name : "") + (d.total_memory ? " · " + bytes(d.total_memory) : "");
    sec.appendChild(el("h3", { id: "log-" + li + "-dev-" + dev, text: head }));
    var box = el("div", { class: "card" });
    sec.appendChild(box);
    var id = "log" + li + "-dev" + dev, group = id;
    if (!d.timeline) { box.appendChild(note("No allocation events on this device.", "info")); return; }
    var replay = log.replay && log.replay.devices[dev];
    if (log.layout_source === "replay") {
      box.appendChild(note("This log holds the program's requests only (no pool decisions: no block sizes, no segment events). " +
        "The reserved bytes and the segment maps below are those of cudapool's replay of the log through its pool under the log's own settings (" +
        (log.replay.conf ? log.replay.conf : "the defaults") + "): what the pool would have done, not a record of it.", "info"));
    }
    memoryCharts(box, d.timeline, d, id, group, "");
    if (replay && replay.timeline) {
      memoryCharts(box, replay.timeline, replay, id + "-replay", group + "-replay", "As replayed by the pool: ");
    }
    var maps = log.layout_source === "replay" ? (replay ? replay.maps : {}) : d.maps;
    var src = log.layout_source === "replay" ? " (as replayed)" : "";
    if (maps && maps.peak) {
      segmentMap(box, maps.peak, log, id + "-map-peak", "Segment map at the reserved peak" + src + ": " + secs(maps.peak.time_s) + " (seq " + maps.peak.seq + ")", !!src);
    }
    if (maps && maps.exit) {
      segmentMap(box, maps.exit, log, id + "-map-exit", "Segment map " + (log.run.ending.summary === "read" || src ? "at exit" : "at the last event (no summary line was read)") + src, !!src);
    }
    if (!maps || (!maps.peak && !maps.exit)) {
      box.appendChild(note("No segment map: " + (log.layout_note || "the log has no segment events") + ".", "info"));
    }
    if (d.sites_at_peak) {
      box.appendChild(el("h4", { text: "Allocation sites holding the most bytes at the allocated peak (" + secs(d.peak_allocated.time_s) + ")" }));
      box.appendChild(table(["bytes held", "blocks", "site (innermost frame first)"], d.sites_at_peak.map(function (s) {
        return [bytesCell(s.bytes), count(s.count), siteView(log, s.site)];
      }), [true, true, false]));
    }
  }
  function sitesSection(sec, log) {
    sec.appendChild(el("h3", { text: "Allocation sites" }));
    var box = el("div", { class: "card" });
    sec.appendChild(box);
    if (!log.sites.frames.length) {
      box.appendChild(note("The log has no backtraces: run with CUDAPOOL_BACKTRACE=python (the Python stack), N (1 to 16 native frames) or all to see where memory is allocated.", "info"));
      return;
    }
    box.appendChild(el("h4", { text: "Most frequent sites (" + count(log.sites.frames.length) + " distinct stacks; Python stacks first)" }));
    box.appendChild(table(["allocations", "bytes allocated in all", "site (innermost frame first)"], log.sites.frequent.map(function (s) {
      return [count(s.count), bytesCell(s.bytes), siteView(log, s.site)];
    }), [true, true, false]));
  }
  function oomSection(sec, log) {
    sec.appendChild(el("h3", { text: "Out of memory: " + (log.oom_count ? count(log.oom_count) + " event" + (log.oom_count === 1 ? "" : "s") : "none") }));
    if (!log.oom_count) return;
    var box = el("div", { class: "card" });
    sec.appendChild(box);
    if (log.ooms.length < log.oom_count) box.appendChild(note("The first " + log.ooms.length + " are listed."));
    log.ooms.forEach(function (o) {
      box.appendChild(el("div", null, el("b", { text: bytes(o.size) + " requested on device " + o.dev + " at " + secs(o.time_s) + " (seq " + o.seq + ")" }), " ",
        o.cause ? el("span", { class: "pill bad", text: o.cause }) : null));
      box.appendChild(el("pre", { class: "explain", text: o.explanation.join("\n") }));
    });
  }
  function leaksSection(sec, log) {
    var l = log.leaks;
    var what = l.source === "summary" ? "still allocated at exit (listed by the summary line, counted from the events)" : "still allocated at the last event (no summary line was read)";
    // Not all of them are leaks: by site and size, long-lived or growing (docs/report.md).
    sec.appendChild(el("h3", { text: "Blocks alive at exit: " + count(l.count) + " block" + (l.count === 1 ? "" : "s") + " " + what + (l.count ? ", " + bytes(l.bytes) : "") }));
    if (!l.count && !l.listed) return;
    var box = el("div", { class: "card" });
    sec.appendChild(box);
    var by = l.by_site;
    if (by && by.group_count) {
      var kinds = ["long-lived", "growing", "after the peak"].filter(function (k) { return by.kinds[k].groups; }).map(function (k) {
        return k + ": " + count(by.kinds[k].groups) + " group" + (by.kinds[k].groups === 1 ? "" : "s") + " (" + count(by.kinds[k].blocks) + " blocks, " + bytes(by.kinds[k].bytes) + ")";
      });
      box.appendChild(el("h4", { text: "By site and size: " + kinds.join("; ") }));
      box.appendChild(el("div", { class: "chart-help", text: "How: " + by.rule + "." }));
      box.appendChild(table(["kind", "blocks", "block size", "bytes", "seq", "stack (innermost frame first)"], by.groups.map(function (g) {
        return [g.kind, count(g.count), bytesCell(g.block_size), bytesCell(g.bytes), g.first_seq + "–" + g.last_seq, stackView(g.backtrace)];
      }), [false, true, true, true, false, false]));
    }
    var rest = l.not_listed;
    if (rest && rest.count) box.appendChild(note("… and " + count(rest.count) + " more block" + (rest.count === 1 ? "" : "s") + " alive at exit (" +
      bytes(rest.size) + " requested, " + bytes(rest.block_size) + " in blocks) not listed in the summary.", "info"));
    box.appendChild(el("h4", { text: "By stack" }));
    box.appendChild(table(["blocks", "bytes", "stack (innermost frame first)"], l.groups.map(function (g) {
      return [count(g.count), bytesCell(g.bytes), stackView(g.backtrace, g.focus)];
    }), [true, true, false]));
    box.appendChild(el("h4", { text: l.entries.length < l.listed ? "The first " + l.entries.length + " blocks listed" : "Every block listed" }));
    box.appendChild(table(["device", "address", "requested", "block", "seq", "allocated at", "thread", "stack"], l.entries.map(function (e) {
      var ev = e.events ? el("div", { class: "note", text: "not as the events have it: " + e.events.why + (e.events.counted ? "; counted as they have it" : "; not counted") }) : null;
      return [e.dev, el("code", { text: e.ptr }), bytesCell(e.size), bytesCell(e.block_size), e.seq, secs(e.time_s), e.tid, [stackView(e.backtrace), ev]];
    }), [false, false, true, true, true, true, true, false]));
  }
  function notesSection(sec, log) {
    var r = log.run;
    if (!r.notes.length && !r.problem_count) return;
    sec.appendChild(el("h3", { text: "Notes" }));
    var box = el("div", { class: "card" });
    sec.appendChild(box);
    r.notes.forEach(function (n) { box.appendChild(note(n)); });
    if (r.problem_count) {
      box.appendChild(el("h4", { text: count(r.problem_count) + " problem" + (r.problem_count === 1 ? "" : "s") + " in the log" + (r.problems.length < r.problem_count ? " (the first " + r.problems.length + ")" : "") }));
      box.appendChild(table(["line", "what"], r.problems.map(function (p) { return [p.line, p.what]; }), [true, false]));
    }
  }
  function ranksSection(main) {
    main.appendChild(el("h2", { id: "ranks", text: "Ranks: " + DATA.ranks.length + " logs" }));
    var best = null;
    DATA.ranks.forEach(function (r) { r.devices.forEach(function (d) { if (d.peak_reserved !== null && (best === null || d.peak_reserved > best)) best = d.peak_reserved; }); });
    var rows = [];
    DATA.ranks.forEach(function (r) {
      var li = DATA.logs.findIndex(function (l) { return l.log === r.log; });
      (r.devices.length ? r.devices : [{ dev: "–", peak_allocated: null, peak_reserved: null, ooms: r.ooms, events: r.events }]).forEach(function (d) {
        rows.push({ attrs: d.peak_reserved !== null && d.peak_reserved === best ? { class: "worst" } : null, cells: [
          r.rank + (r.rank_from === "order" ? "*" : ""), r.host || "?", d.dev, bytesCell(d.peak_allocated), bytesCell(d.peak_reserved),
          d.ooms ? el("span", { class: "pill bad", text: count(d.ooms) }) : "0", count(d.events),
          el("a", { href: "#log-" + li, text: base(r.log) }), r.ending === "read" ? "" : el("span", { class: "pill warn", text: r.ending === "too long" ? "summary line too long to read" : "no summary line" })] });
      });
    });
    main.appendChild(el("div", { class: "card" }, table(["rank", "host", "device", "peak allocated", "peak reserved", "OOMs", "events", "log", ""], rows,
      [false, false, false, true, true, true, true, false, false]),
      el("div", { class: "chart-help", style: "margin-top:6px", text: "Highlighted: the largest peak reserved." + (DATA.ranks.some(function (r) { return r.rank_from === "order"; }) ? " *: the header names no rank; the log's place in the order given." : "") }),
      CLOCK_RANGE ? note("The charts of every log share one time axis: seconds since the earliest start among the logs" + (CLOCK.start_time ? " (" + CLOCK.start_time + ")" : "") +
        ", each event on the wall clock (the header's start_unix_ns + t_ns − start_t_ns), so the ranks' charts line up. Times in the text count from each log's first event.", "info") : null,
      (CLOCK.notes || []).map(function (n) { return note(n); }),
      DATA.rank_notes.map(function (n) { return note(n); })));
  }
  function tuneSection(main) {
    var t = DATA.tune;
    main.appendChild(el("h2", { id: "tune", text: "Tuning: what cudapool tune finds" }));
    if (t.error || t.skipped) { main.appendChild(el("div", { class: "card" }, note("No tuning: " + (t.error || t.skipped)))); return; }
    var rec = t.recommendation || {};
    main.appendChild(el("div", { class: "card" },
      el("div", null, el("b", { text: rec.keep_own ? "Keep the log's own settings." : "Recommended setting: " }), rec.keep_own ? "" : el("code", { text: rec.setting || "" })),
      rec.why ? el("div", { text: rec.why }) : null,
      !rec.keep_own && rec.cudapool_conf ? kv([["CUDAPOOL_CONF", el("code", { text: rec.cudapool_conf })], ["PYTORCH_CUDA_ALLOC_CONF", el("code", { text: rec.pytorch_conf || "" })]]) : null,
      (rec.caveats || []).map(function (c) { return note(c); }),
      el("div", { class: "chart-help", text: "Each log replayed through the pool under a sweep of settings (cudapool tune --json): a prediction; check it with one real run." })));
    (t.logs || []).forEach(function (l) { main.appendChild(el("h3", { text: "Settings tried on " + base(l.path) + " (" + count(l.events) + " events)" })); main.appendChild(tuneTable(l.results || [])); });
    if (t.worst && t.worst.length) { main.appendChild(el("h3", { text: "Settings by their worst log" })); main.appendChild(tuneTable(t.worst)); }
  }
  function tuneTable(results) {
    var v = function (x, f) { return x === undefined || x === null ? "–" : f ? f(x) : x; };
    return el("div", { class: "card" }, table(["rank", "setting", "peak reserved", "vs own", "peak allocated", "overhead", "device allocs", "device frees", "retries", "OOMs"],
      results.map(function (r) {
        return { attrs: r.rank === 1 ? { class: "best" } : null, cells: [v(r.rank), el("code", { text: v(r.setting) }), bytesShort(r.peak_reserved),
          v(r.vs_own, function (x) { return (x > 0 ? "+" : "") + (100 * x).toFixed(1) + " %"; }), bytesShort(r.peak_allocated), v(r.overhead, pct),
          v(r.device_allocs, count), v(r.device_frees, count), v(r.retries, count), v(r.ooms, count)] };
      }), [true, false, true, true, true, true, true, true, true, true]),
      results.filter(function (r) { return r.note; }).map(function (r) {
        return el("div", { class: "tune-note" }, note("rank " + r.rank + " (" + r.setting + "): " + r.note));
      }));
  }

  // ---- the verdict: the first screen (verdict.py) ------------------------------------------------
  // Figures as tiles, each marked data-verdict for the self-check (tests/cli/verdict_agree.sh: they
  // equal `cudapool report --json`'s verdict), then verdict.py's lines, the setting to paste and
  // the sites that held most at the peak of allocated.
  function verdictCard(log, li) {
    var vd = log.verdict;
    var card = el("div", { class: "card verdict", id: "verdict-" + li });
    if (!vd) return card;
    var several = Object.keys(vd.devices).length > 1;
    function tile(dev, key, n, what, cls) {
      return el("div", { class: "tile " + (cls || "") },
        el("div", { class: "fig", "data-verdict": key, "data-log": li, "data-dev": dev, "data-bytes": n === null || n === undefined ? "" : n, title: n === null || n === undefined ? "" : count(n) + " bytes", text: bytes(n) }),
        el("div", { class: "what", text: (several ? "device " + dev + ": " : "") + what }));
    }
    var tiles = el("div", { class: "tiles" });
    Object.keys(vd.devices).forEach(function (dev) {
      var d = vd.devices[dev];
      tiles.appendChild(tile(dev, "peak_reserved", d.peak_reserved, "nvidia-smi at the peak, less the CUDA context (the pool's reserved bytes" + (vd.source === "replay" ? ", as replayed)" : ")")));
      tiles.appendChild(tile(dev, "peak_allocated", d.peak_allocated, "the most the program held at once (max_memory_allocated)"));
      tiles.appendChild(tile(dev, "never_used", d.never_used, "cache never in use at the same time (peak reserved − peak allocated)"));
      if (d.exit.empty_cache_returns !== null && d.exit.empty_cache_returns !== undefined)
        tiles.appendChild(tile(dev, "empty_cache_returns", d.exit.empty_cache_returns, "cached at the end that empty_cache() would give back"));
    });
    var s = vd.setting;
    if (s.setting) tiles.appendChild(tile("all", "saving", s.saving, "less at the peak with " + s.setting + " (predicted by cudapool tune)", "fix"));
    card.appendChild(el("h3", { style: "margin-top:0", text: "The answer" + (vd.source === "replay" ? " (as replayed: the log holds requests only)" : "") }));
    card.appendChild(tiles);
    if (s.setting) {
      card.appendChild(el("div", { class: "paste" }, el("span", { text: "paste:" }),
        el("code", { "data-setting": s.setting, text: "PYTORCH_CUDA_ALLOC_CONF=" + s.pytorch_conf })));
    }
    // every line but the sites', which the table below shows
    card.appendChild(el("ul", { class: "says" }, vd.lines.filter(function (line) { return line.what !== "sites"; }).map(function (line) { return el("li", { text: line.text }); })));
    Object.keys(vd.devices).forEach(function (dev) {
      var sites = vd.devices[dev].sites;
      if (!sites.length) return;
      card.appendChild(el("h4", { text: "Held most at the peak of allocated" + (several ? " (device " + dev + ")" : "") + ": your lines first" }));
      card.appendChild(table(["bytes", "blocks", "where"], sites.map(function (x) {
        return [bytesCell(x.bytes), count(x.blocks), el("code", { text: x.where })];
      }), [true, true, false]));
    });
    return card;
  }

  // ---- the page --------------------------------------------------------------------------------
  function build() {
    var app = document.getElementById("app");
    var nav = el("nav");
    var top = el("header", { class: "top" }, el("span", { class: "brand", text: "cudapool report" }),
      el("span", { class: "sub", text: DATA.logs.length + " log" + (DATA.logs.length === 1 ? "" : "s") + " · written " + DATA.generated }), nav);
    app.appendChild(top);
    var main = el("main");
    app.appendChild(main);
    if (DATA.ranks) { nav.appendChild(el("a", { href: "#ranks", text: "Ranks" })); ranksSection(main); }
    if (DATA.tune) nav.appendChild(el("a", { href: "#tune", text: "Tuning" }));
    DATA.logs.forEach(function (log, li) {
      nav.appendChild(el("a", { href: "#log-" + li, text: DATA.logs.length > 1 ? "rank " + log.rank : base(log.log) }));
      var sec = el("section", { id: "log-" + li });
      main.appendChild(sec);
      sec.appendChild(el("h2", { text: logTitle(log) }));
      sec.appendChild(verdictCard(log, li));
      sec.appendChild(runCard(log));
      sec.appendChild(el("h3", { text: "Peaks" }));
      sec.appendChild(peaksTable(log, li));
      var held = window.cudapoolHeld({ el: el, table: table, bytesCell: bytesCell, bytes: bytes, secs: secs, note: note }, log, li);
      if (held) { sec.appendChild(el("h3", { text: "Held over time" })); sec.appendChild(held); }
      Object.keys(log.devices).forEach(function (dev) { deviceSection(sec, log, li, dev); });
      sitesSection(sec, log);
      oomSection(sec, log);
      leaksSection(sec, log);
      notesSection(sec, log);
    });
    if (DATA.tune) tuneSection(main);
  }
  function ink(chart) {
    var c = chart.canvas, ctx = c.getContext("2d");
    var img = ctx.getImageData(0, 0, c.width, c.height).data;
    var n = parseInt(chart.ink.slice(1), 16), R = n >> 16, G = (n >> 8) & 255, B = n & 255;
    var bg = chart.background, drawn = 0, inked = 0;
    for (var i = 0; i < img.length; i += 4) {
      if (img[i + 3] === 0) continue;
      if (bg && img[i] === bg[0] && img[i + 1] === bg[1] && img[i + 2] === bg[2]) continue;
      drawn++;
      if (img[i + 3] > 160 && Math.abs(img[i] - R) + Math.abs(img[i + 1] - G) + Math.abs(img[i + 2] - B) < 60) inked++;
    }
    return { id: chart.id, kind: chart.kind, width: c.width, height: c.height, drawn: drawn, ink: inked, expect_ink: chart.expect_ink };
  }
  function selfCheck() {
    charts.forEach(function (ch) { check.charts.push(ink(ch)); });
    Array.prototype.forEach.call(document.querySelectorAll("[data-peak]"), function (td) {
      check.peaks.push({ log: +td.getAttribute("data-log"), dev: td.getAttribute("data-dev"), kind: td.getAttribute("data-peak"), bytes: +td.getAttribute("data-bytes") });
    });
    check.held = [];      // the figures of "Held over time" (held.js)
    Array.prototype.forEach.call(document.querySelectorAll("[data-held]"), function (td) {
      check.held.push({ log: +td.getAttribute("data-log"), dev: td.getAttribute("data-dev"), key: td.getAttribute("data-held"), value: +td.getAttribute("data-value") });
    });
    check.verdict = [];
    Array.prototype.forEach.call(document.querySelectorAll("[data-verdict]"), function (x) {
      var b = x.getAttribute("data-bytes");
      check.verdict.push({ log: +x.getAttribute("data-log"), dev: x.getAttribute("data-dev"), key: x.getAttribute("data-verdict"), bytes: b === "" ? null : +b });
    });
    var first = document.getElementById("verdict-0");
    check.verdict_bottom = first ? Math.round(first.getBoundingClientRect().bottom + window.scrollY) : null;
    check.viewport = [window.innerWidth, window.innerHeight];
    check.render_ms = Math.round(performance.now());
    var out = document.getElementById("cudapool-selfcheck");
    out.textContent = JSON.stringify(check);
    out.setAttribute("data-done", "1");
  }
  var resizeTimer = null;
  window.addEventListener("resize", function () {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(function () {
      charts.forEach(function (ch) { if (ch.u) ch.u.setSize({ width: chartWidth(ch.box), height: ch.u.height }); else ch.redraw(); });
    }, 120);
  });
  try { build(); } catch (e) { check.errors.push("building the page: " + (e && e.stack || e)); }
  requestAnimationFrame(function () { setTimeout(selfCheck, 0); });
})();
