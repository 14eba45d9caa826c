# SPDX-License-Identifier: Apache-2.0
"""tests/python/conftest.py: what the pytest suite of the Python package (scripts/cudapool_analysis)
shares: the package and the engine's test oracles (tests/oracle) on sys.path, the C++ tools of
the build (CUDAPOOL_BUILD_DIR, set by ctest; else the source tree's build/, as tools.py looks), a
log to read, and helpers that compress it. Run by
ctest as `/usr/bin/python3 -m pytest tests/python` (Debian's python3, which sees python3-pytest);
not a test itself.
"""

import gzip
import os
import subprocess
import sys

import pytest

SOURCE = os.environ.get("CUDAPOOL_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE, "scripts"))
sys.path.insert(0, os.path.join(SOURCE, "tests"))    # the engine's test oracles: tests/oracle
FIXTURES = os.path.join(SOURCE, "tests", "cli", "fixtures")


@pytest.fixture
def log_bytes():
    """A log with pool decisions and a summary line (tests/cli/fixtures/normal.jsonl)."""
    with open(os.path.join(FIXTURES, "normal.jsonl"), "rb") as f:
        return f.read()


@pytest.fixture
def long_log_bytes():
    """A longer log, of requests only, that compresses to many zstd blocks (1.6 MB: the example)."""
    with open(os.path.join(SOURCE, "examples", "logs", "training-loop.jsonl"), "rb") as f:
        return f.read()


def gzipped(data):
    return gzip.compress(data)


def zstded(data):
    """data compressed by the zstd program (Debian's zstd: scripts/cudapool setup installs it)."""
    return subprocess.run(["zstd", "-q", "-c"], input=data, stdout=subprocess.PIPE,
                          check=True).stdout


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return str(path)
