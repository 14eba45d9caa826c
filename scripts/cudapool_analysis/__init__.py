"""cudapool_analysis: the Python side of cudapool, one package (Python 3.11, standard library only).

  vocabulary  the names of cudapool.log/1 (docs/log-format.md): actions, fields and their types,
              statistics; written once here, checked against the C++ source by
              tests/cli/vocabulary_check.sh
  reader      the one parser of log lines: streaming events, the header and summary lines, and
              the malformed lines with their line numbers
  checks      the header's and the summary line's fields checked against their kinds
  accounting  the first pass of the report: what the events imply per device (statistics, peaks,
              request sizes, live blocks)
  layout      the second pass: the segments' layout at the reserved peak (fragmentation)
  replayed    the pool's decisions for a log of requests only, from `cudapool-replay --write-log`
  oom         the figures of an oom event and the explanation the shim printed
  report      one log's report as a JSON-ready dict; several logs: the cross-rank table
  text        the report as text (the statistics table in torch.cuda.memory_summary()'s layout)
  timeline    the HTML page's timelines: each device's bytes over time, downsampled, peaks exact
  segmap      the HTML page's segment maps: blocks allocated, fenced or free, with their sites
  sites       allocation sites (alloc events' backtraces): most frequent, held at the peak, leaks
  pagedata    what the HTML page shows of one log, gathered along the report's two passes
  htmlreport  `report --html`: the self-contained page (page/: its template, script, styles)
  tools       the command line that runs a C++ tool (cudapool-tune for report --html --tune)
  cli         `python3 -m cudapool_analysis report [--json | --html OUT [--tune]] LOG...`

Not here: the replay and tune (C++ tools, tools/), the log writer (log/, in the shim). Importing
the package imports nothing but this docstring: tests/log_check.py takes only the vocabulary.
"""
