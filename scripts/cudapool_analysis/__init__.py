"""cudapool_analysis: the Python side of cudapool, one package (Python 3.11, standard library only).

  vocabulary  the names of cudapool.log/1 (docs/log-format.md): actions, fields and their types,
              statistics; written once here, checked against the C++ source by
              tests/cli/vocabulary_check.sh
  reader      the one parser of log lines: streaming events, the header and summary lines, and
              the malformed lines with their line numbers
  jsonline    the strict JSON of one line (docs/log-format.md, "Valid lines"), lines read in
              bounded memory: reader's, the same rule as cudapool-replay's
  checks      the header's and the summary line's fields checked against their kinds
  accounting  the first pass of the report: what the events imply per device (statistics, peaks,
              request sizes, live blocks)
  layout      the second pass: the segments' layout at the reserved peak (fragmentation)
  replayed    the pool's decisions for a log of requests only, from `cudapool-replay --write-log`
  oom         the figures of an oom event (its explanation: the engine's, pool/oom.cpp's text)
  report      one log's report as a JSON-ready dict; several logs: the cross-rank table
  text        the report as text (the statistics table and the oom explanations: the engine's lines)
  timeline    the HTML page's timelines: each device's bytes over time, downsampled, peaks exact
  segmap      the HTML page's segment maps: blocks allocated, fenced or free, with their sites
  frames      backtrace frames named: library + offset from the summary line's modules, the
              leaks' symbols (the page's sites and the memory_viz export)
  sites       allocation sites (alloc events' backtraces): most frequent, held at the peak, leaks
  clock       the wall clock of a log's events; the time zero of several logs (the page, the
              exports)
  pagedata    what the HTML page shows of one log, gathered along the report's two passes; the
              logs' charts on one time axis
  htmlreport  `report --html`: the self-contained page (page/: its template, script, styles)
  tools       the one finder of the C++ tools (cudapool-replay, cudapool-tune)
  downsample  the rule that keeps every peak of a long series (the page, the Perfetto export)
  export      what the exports share: the log with pool decisions, writing OUT whole
  memviz      `export --memory-viz`: the log as a PyTorch memory snapshot (memviz_snapshot: its
              dicts and the file)
  perfetto    `export --perfetto`: logs as one Chrome trace event file
  exportcli   the `export` subcommand
  control     a running process's control endpoint (CUDAPOOL_CONTROL): requests, the live
              memory_viz snapshot, the sockets of `top`
  controlcli  the `stats`, `empty-cache`, `snapshot` and `top` subcommands
  cli         `python3 -m cudapool_analysis report [--json | --html OUT [--tune]] LOG...`

Not here: the replay and tune (C++ tools, tools/), the log writer (log/, in the shim). Importing
the package imports nothing but this docstring: tests/log_check.py takes only the vocabulary.
"""
