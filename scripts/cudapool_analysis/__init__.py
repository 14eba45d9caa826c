# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis: the Python side of cudapool, one package (Python 3.11, standard library only).

  vocabulary  the names of cudapool.log/1 (docs/log-format.md): actions, fields and their types,
              statistics; written once here, checked against the C++ source by
              tests/cli/vocabulary_check.sh
  reader      the one parser of log lines: streaming events, the header and summary lines, and
              the malformed lines with their line numbers
  jsonline    the strict JSON of one line (docs/log-format.md, "Valid lines"), lines read in
              bounded memory: reader's, the same rule as cudapool-replay's
  checks      the header's and the summary line's fields checked against their kinds
  text        the report as text (the statistics table and the oom explanations: the engine's lines)
  frames      backtrace frames named: library + offset from the summary line's modules, the
              leaks' symbols (the memory_viz export)
  clock       the wall clock of a log's events; the time zero of several logs (the page, the
              exports)
  rank        the rank a log's header names (the Perfetto export's process names)
  timeaxis    the HTML page's one time axis for several logs
  htmlreport  `report --html`: the self-contained page (page/: its template, script, styles)
  tools       the one finder of the C++ tools (cudapool-replay, cudapool-tune)
  export      what the exports share: ExportError
  memviz      `export --memory-viz`: the engine's pass as a PyTorch memory snapshot
              (memviz_snapshot: its dicts and the file)
  perfetto    `export --perfetto`: logs as one Chrome trace event file
  exportcli   the `export` subcommand
  control     a running process's control endpoint (CUDAPOOL_CONTROL): requests, the live
              memory_viz snapshot, the sockets of `top`
  controlproc why a process has no control socket (/proc: no process, no shim, no
              CUDAPOOL_CONTROL, no CUDA call yet), and the user's processes under the shim
  nvml        the driver's figure per process (what nvidia-smi shows), NVML through ctypes
  controltable  the live figures' one column table: top's text, --json and --csv, stats --csv
  controlargs the options of `stats`, `empty-cache`, `snapshot` and `top` (-h, --version, usage)
  controlcli  the `stats`, `empty-cache`, `snapshot` and `top` subcommands
  cli         `python3 -m cudapool_analysis report [--json | --html OUT [--tune]] LOG...`

Every figure comes from the analysis engine (cudapool-analyze, engine.py); this package renders
its output. Not here: the replay and tune (C++ tools, tools/), the log writer (log/, in the shim),
the Python passes the engine replaced (its test oracles, tests/oracle: test code, not shipped and
not installed; no module here imports them: tests/python/test_oracle_apart.py). Importing
the package imports nothing but this docstring: tests/log_check.py takes only the vocabulary.
"""
