# SPDX-License-Identifier: Apache-2.0
"""tests/oracle: the analysis engine's test oracles (issue 27), the Python passes that computed the
report, the HTML page's data and the two exports before the C++ engine (tools/analyze,
cudapool-analyze) did. The agreement tests run them beside the engine on every log of the suite
and want the same output. They are not the shipped package (scripts/cudapool_analysis), which
renders the engine's output and imports nothing from here; they are not installed
(tests/python/test_oracle_apart.py checks both). Import them with the directory tests/ and
scripts/ on sys.path: `from oracle import report`.

  report        one log's report as a JSON-ready dict, the cross-rank table of several:
                tests/python/test_engine.py, tests/cli/analyze_agree.sh, tests/fuzz/reader_fuzz.py
  accounting    its first pass: what the events imply per device (statistics, peaks, live blocks)
  layout        its second pass: the segments' layout at the reserved peak (fragmentation)
  leaks         its leaks, checked against the summary line's
  ending        how a log ends (its summary line, cut, ...)
  oom           an oom event's figures
  pagedata      the HTML page's data of one log (the engine's `page` object):
                tests/cli/analyze_agree.sh; with timeline, segmap, sites, downsample
  perfetto_pass the Perfetto export's figures: tests/cli/perfetto_agree.sh
  memviz_pass   the memory_viz export's pass: tests/cli/memviz_agree.sh
  pool_log      what the export passes share: the log with pool decisions (replayed: the C++
                replay's log of a request-only log)

What the shipped package still needs of them lives there: the report's TOP (text.py), a header's
rank (rank.py), the page's time axis (timeaxis.py), the snapshot's Device, Region and Block and
the notes (memviz.py), ExportError (export.py).
"""
