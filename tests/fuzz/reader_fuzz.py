#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/fuzz/reader_fuzz.py [SECONDS] [--seed N] [--replay BIN] [--keep DIR]: a seeded mutation
fuzzer (standard library only) for the Python log reader: tests/oracle/reader.py and
the report built on it (the Python report, kept as the engine's test oracle in tests/oracle, text
and --json). It mutates the fixture logs (tests/cli/fixtures/*.jsonl and the replay fuzzer's seeds,
tests/fuzz/corpus/replay_fuzz/): bit flips, bytes replaced and inserted, truncation, splices of two
logs, lines repeated, dropped and swapped, numbers made huge, negative or fractional, values of the
wrong kind, deep nesting, invalid UTF-8, lone surrogates, lines over the 64 MiB limit. For every
input:

  - LogReader reads it without raising (a bad line is a counted problem, never an exception);
  - the report (the test oracle tests/oracle/report.py: read_log, then the text and the JSON)
    raises nothing but LogError, the package's documented error for what is not a log;
  - neither takes more than 10 s (an alarm; a hang is a failure);
  - with --replay BIN (cudapool-replay): both call the same lines malformed (docs/log-format.md,
    "Valid lines"; tests/cli/replay_report_agree.sh checks the fixtures).

Runs for SECONDS (default 60), deterministic for a --seed (default 0) and the same machine speed.
A failing input is written to DIR (default $TMPDIR/reader_fuzz-failures) with its traceback;
exit status 1 when any failed, 0 otherwise, 2 on a usage error. Not a ctest test (ctest runs the
fixtures' checks); python3-hypothesis is not needed.
"""

import argparse
import glob
import io
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SRC, "scripts"))
sys.path.insert(0, os.path.join(SRC, "tests"))     # the test oracles (tests/oracle)

from oracle import reader  # noqa: E402
from oracle.reader import LogError, LogReader  # noqa: E402
from cudapool_analysis.text import text_report  # noqa: E402
from oracle.report import read_log  # noqa: E402

TIME_LIMIT = 10   # seconds per input
NUMBERS = [b"0", b"-0", b"-1", b"1.5", b"1e3", b"1e999", b"-1e999", b"00012", b"18446744073709551615",
           b"18446744073709551616", b"9223372036854775808", b"-9223372036854775809",
           b"1" * 4301, b"9" * 20000, b"NaN", b"Infinity", b"true", b"null", b'"12"', b'"0x10"',
           b"[]", b"{}", b'"0x' + b"f" * 17 + b'"', b'"0x_1"', b'"0x1 "', b'"\\u0030x1"']
STRINGS = [b'"\\ud800"', b'"\\udc00\\ud800"', b'"\xff"', b'"\xc0\xaf"', b'"\xed\xa0\x80"', b'"\xf4\x90\x80\x80"',
           b'"\x01"', b'"\\x"', b'"' + b"A" * 5000 + b'"', b'"\\ud83d\\ude00"', b'"summary"', b'"alloc"',
           b'"cudapool.log/1"', b'"free_requested"', b'"context_dropped"', b'"segment_alloc"']
KEYS = [b"seq", b"t_ns", b"tid", b"dev", b"ctx", b"action", b"ptr", b"size", b"block_size",
        b"segment", b"stream", b"schema", b"devices", b"leaks", b"modules", b"stats", b"options",
        b"total_memory", b"id", b"events", b"log_errors", b"backtrace", b"rank", b"environment"]
INSERTS = [b"\n", b"\r", b"\x00", b"\xff", b"\xc3", b"{", b"}", b"[", b"]", b'"', b"\\", b",", b":",
           b" ", b"\t", b"\x0c", b"\xef\xbb\xbf", b"\xe2\x80\xae", b"-"]


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang("more than %d s" % TIME_LIMIT)


def seeds():
    paths = sorted(glob.glob(os.path.join(SRC, "tests", "cli", "fixtures", "*.jsonl")))
    paths += sorted(glob.glob(os.path.join(HERE, "corpus", "replay_fuzz", "*")))
    out = []
    for p in paths:
        with open(p, "rb") as f:
            out.append(f.read())
    return out


def tokens(data, rng):
    """The position and length of a random JSON-ish number, string or key in data, or None."""
    for _ in range(8):
        i = rng.randrange(len(data)) if data else 0
        c = data[i:i + 1]
        if c.isdigit() or c == b"-":
            j = i
            while j < len(data) and data[j:j + 1] in b"0123456789.eE+-":
                j += 1
            while i > 0 and data[i - 1:i] in b"0123456789.eE+-":
                i -= 1
            return i, j - i
        if c == b'"':
            j = data.find(b'"', i + 1)
            if j > 0:
                return i, j - i + 1
    return None


def mutate(data, corpus, rng):
    """One to four random mutations of data (bytes)."""
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(14)
        n = len(data)
        if kind == 0 and n:                                   # bit flips
            b = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(n)] ^= 1 << rng.randrange(8)
            data = bytes(b)
        elif kind == 1 and n:                                 # a byte replaced
            i = rng.randrange(n)
            data = data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
        elif kind == 2:                                       # bytes inserted
            i = rng.randint(0, n)
            data = data[:i] + rng.choice(INSERTS) * rng.randint(1, 3) + data[i:]
        elif kind == 3 and n:                                 # truncated
            data = data[:rng.randrange(n)]
        elif kind == 4:                                       # spliced with another log
            other = rng.choice(corpus)
            data = data[:rng.randint(0, n)] + other[rng.randint(0, len(other)):]
        elif kind in (5, 6):                                  # lines repeated, dropped, swapped
            lines = data.split(b"\n")
            if lines:
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                op = rng.randrange(3)
                if op == 0:
                    lines.insert(i, lines[j])
                elif op == 1:
                    del lines[i]
                else:
                    lines[i], lines[j] = lines[j], lines[i]
            data = b"\n".join(lines)
        elif kind == 7:                                       # a number or string replaced
            t = tokens(data, rng)
            if t:
                i, length = t
                data = data[:i] + rng.choice(NUMBERS + STRINGS) + data[i + length:]
        elif kind == 8:                                       # a key replaced
            t = tokens(data, rng)
            if t and data[t[0]:t[0] + 1] == b'"':
                i, length = t
                data = data[:i] + b'"' + rng.choice(KEYS) + b'"' + data[i + length:]
        elif kind == 9:                                       # a field added to a line
            i = data.find(b"}", rng.randint(0, n))
            if i > 0:
                data = (data[:i] + b',"' + rng.choice(KEYS) + b'":' +
                        rng.choice(NUMBERS + STRINGS) + data[i:])
        elif kind == 10:                                      # deep nesting
            depth = rng.choice([63, 64, 65, 100, 1000, 20000])
            i = data.find(b"}", rng.randint(0, n))
            if i > 0:
                data = data[:i] + b',"x":' + b"[" * depth + b"]" * depth + data[i:]
            else:
                data += b"[" * depth + b"\n"
        elif kind == 11:                                      # a long line
            i = rng.randint(0, n)
            data = data[:i] + b" " * rng.choice([1 << 16, 1 << 20]) + data[i:]
        elif kind == 12:                                      # a line without its newline
            data = data.replace(b"\n", b"", 1)
        elif kind == 13 and n:                                # a chunk duplicated
            i = rng.randrange(n)
            data = data[:i] + data[i:i + rng.randint(1, 200)] * rng.randint(2, 20) + data[i:]
    return data[:1 << 21]


def malformed_lines(problems):
    return [line for line, what in problems if what.startswith("malformed")]


def check(data, path, replay):
    """Raises AssertionError (or whatever the code under test raised) for a broken promise."""
    r = LogReader(io.BytesIO(data))
    for _ in r:
        pass
    assert r.lines >= r.blank_lines, "lines counted"
    with open(path, "wb") as f:
        f.write(data)
    try:
        rep, _ = read_log(path)
    except LogError:
        rep = None
        if replay:   # not a log for the report: not one for the replay either
            out = subprocess.run([replay, path], capture_output=True, timeout=TIME_LIMIT)
            assert out.returncode == 1, "the report says not a log, cudapool-replay exits %d" % (
                out.returncode)
    if rep is not None:
        for d in rep["devices"].values():
            d["summary_table"] = []   # the engine's lines (pool/summary.h), not the oracle's
        text_report(rep)
        json.dumps(rep)
        if replay and rep["problem_count"] < reader.MAX_PROBLEMS:
            out = subprocess.run([replay, "--json", path], capture_output=True, timeout=TIME_LIMIT)
            assert out.returncode == 0, "cudapool-replay exited %d on a log the report reads: %s" % (
                out.returncode, out.stderr[:300])
            d = json.loads(out.stdout)
            theirs = [p["line"] for p in d["problems"] if p["what"].startswith("malformed line")]
            ours = malformed_lines((p["line"], p["what"]) for p in rep["problems"])
            if len(d["problems"]) < 100:
                assert ours == theirs, "malformed lines: report %s, replay %s" % (ours, theirs)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("seconds", nargs="?", type=float, default=60)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--replay", help="cudapool-replay: also compare the malformed lines")
    p.add_argument("--keep", default=os.path.join(tempfile.gettempdir(), "reader_fuzz-failures"))
    args = p.parse_args()
    if args.seconds < 0:
        p.error("SECONDS must be at least 0")
    corpus = seeds()
    if not corpus:
        print("reader_fuzz: no seed logs found", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    signal.signal(signal.SIGALRM, _alarm)
    failures = 0
    runs = 0
    start = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input.jsonl")
        # The seeds themselves first, then mutations until the time is up.
        pending = list(corpus)
        while pending or time.monotonic() - start < args.seconds:
            data = pending.pop() if pending else mutate(rng.choice(corpus), corpus, rng)
            runs += 1
            signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT)
            try:
                check(data, path, args.replay)
            except BaseException as e:   # KeyboardInterrupt too: it may be a hang
                signal.setitimer(signal.ITIMER_REAL, 0)
                if isinstance(e, KeyboardInterrupt):
                    raise
                failures += 1
                os.makedirs(args.keep, exist_ok=True)
                name = os.path.join(args.keep, "failure-%d-%d" % (args.seed, runs))
                with open(name, "wb") as f:
                    f.write(data)
                with open(name + ".txt", "w") as f:
                    f.write(traceback.format_exc())
                print("reader_fuzz: FAIL on input %d (%s: %s); input: %s" % (
                    runs, type(e).__name__, str(e)[:200], name))
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
    print("reader_fuzz: %d inputs in %.0f s (seed %d), %d failures" % (
        runs, time.monotonic() - start, args.seed, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
