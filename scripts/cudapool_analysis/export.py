# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/export.py: what the two exports (`cudapool export --memory-viz`, memviz.py;
`--perfetto`, perfetto.py; docs/exports.md) share: ExportError, a log that cannot be exported
(memviz.check_decisions raises it, exportcli.py says it).

Not here: what either export writes, reading and replaying the logs (the analysis engine), writing
OUT (outfile.py), the command line (exportcli.py). The Python passes the engine replaced, and what
they share (the log with pool decisions: tests/oracle/pool_log.py), are test oracles under
tests/oracle/, not installed.
"""


class ExportError(Exception):
    """A log that cannot be exported; the message says why."""


__all__ = ["ExportError"]
