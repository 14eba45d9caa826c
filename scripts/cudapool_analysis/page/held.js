// SPDX-License-Identifier: Apache-2.0
/* cudapool report --html: the card "Held over time" (issue 31; docs/report.md, "Held over time"),
   under the peaks: per device, and for all devices together when there are several, the
   time-weighted mean of allocated and of reserved bytes over the log's span (its first event to
   its last) and how long reserved bytes stayed above the level (by default half the peak;
   `cudapool report --level` chooses another). The figures are each log's "held" (htmlreport.py
   takes them from the report: held.py page_held); a log of requests only shows the replay's
   reserved bytes, marked so. Each figure's cell carries data-held (key, log, device, value) for
   the page's self-check (report.js), which tests/cli/report_html.sh compares with
   `cudapool report --json`. Defines window.cudapoolHeld(helpers, log, li), which report.js calls
   with its own el, table, bytesCell, bytes, secs, note. Not here: any figure (the engine's), the
   rest of the page (report.js). */
(function () {
  "use strict";
  function levelWords(level) {
    if (level.of_peak === null) return "--level " + level.given;
    return level.of_peak === 0.5 ? "half the peak" : level.given + " of the peak";
  }
  window.cudapoolHeld = function (h, log, li) {
    var held = log.held;
    if (!held) return null;
    var all = held.log, span = all.span_s;
    if (span === null) return null;
    var card = h.el("div", { class: "card", id: "held-" + li });
    if (span === 0) {
      card.appendChild(h.note("No time span: the log's first and last events are at the same time, so there is no mean over time and no time above a level.", "info"));
      return card;
    }
    var several = Object.keys(held.devices).length > 1;
    function cell(key, dev, value, text, exact) {
      var attrs = value === null || value === undefined ? {} : { "data-held": key, "data-log": li, "data-dev": dev, "data-value": value };
      if (exact) return h.bytesCell(value, attrs);
      return { td: h.el("td", Object.assign({ class: "num" }, attrs), text) };
    }
    function row(dev, part, replayed) {
      var a = part.allocated, r = part.reserved, as = "";
      if (!r && replayed && replayed.reserved) { r = replayed.reserved; as = " (as replayed)"; }
      var mean = function (x, key, none) {
        if (!x) return cell(null, dev, null, none);
        return x.mean === null ? cell(null, dev, null, "left out (the notes say why)") : cell(key, dev, x.mean, null, true);
      };
      var above = "–", share = "–", level = "–";
      if (r) {
        level = h.bytes(r.level) + " (" + levelWords(all.level) + ")" + as;
        above = h.secs(r.above_s) + (r.unsure_ns ? " to " + h.secs((r.above_ns + r.unsure_ns) / 1e9) : "") + as;
        share = (100 * r.share).toFixed(1) + " %" + (r.unsure_ns ? " or more" : "");
      }
      return [dev, mean(a, "mean_allocated", "no alloc events"),
        r ? mean(r, "mean_reserved" + (as ? "_replayed" : ""), "") : cell(null, dev, null, "no segment events"),
        cell(null, dev, null, level),
        r ? cell("above_ns" + (as ? "_replayed" : ""), dev, r.above_ns, above) : cell(null, dev, null, "–"),
        cell(null, dev, null, share)];
    }
    var replay = held.replay;
    var rows = Object.keys(held.devices).map(function (dev) {
      return row(dev, held.devices[dev], replay && replay.devices[dev]);
    });
    if (several) rows.push(row("all", all, replay && replay.log));
    card.appendChild(h.table(["device", "mean allocated", "mean reserved", "level", "time reserved stayed above the level", "share of the time"],
      rows, [false, true, true, true, true, true]));
    var peak = several && all.peak_reserved ? " All devices together: their reserved bytes added up, which peaked at " + h.bytes(all.peak_reserved.bytes) + " (" + h.secs(all.peak_reserved.time_s) + ")." : "";
    card.appendChild(h.el("div", { class: "chart-help", style: "margin-top:6px", text: "Over the log's span, from its first event to its last: " + h.secs(span) +
      ". A mean weighs each figure by how long it was held; the time above counts how long reserved bytes stayed strictly above the level (" + levelWords(all.level) +
      "; `cudapool report --level` chooses another: a fraction of the peak or a size)." + peak }));
    return card;
  };
})();
