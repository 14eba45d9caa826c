# SPDX-License-Identifier: Apache-2.0
"""cudapool_analysis/jsonline.py: the JSON of one line of a cudapool.log/1 file, strictly as
docs/log-format.md ("Valid lines") has it and as cudapool-replay reads it (tools/replay/
flat_json.cpp): lines of at most MAX_LINE bytes, read in bounded memory whatever the input; RFC
8259 JSON only (no NaN or Infinity, numbers of any length), no lone surrogate escapes, at most
MAX_DEPTH levels deep. Used by outfile.py (is a file a log?) and by the tests' Python reader
(tests/oracle/reader.py), which decides what the object means.

Not here: the fields of the log and their kinds (vocabulary.py; checked by the engine).
"""

import json
import re

MAX_LINE = 64 << 20  # the longest line read, its newline not counted
MAX_DEPTH = 64       # the deepest a line nests, its object counted
_SKIP_CHUNK = 1 << 20
BOM = b"\xef\xbb\xbf"   # UTF-8's byte order mark, taken at the start of a file
_MAX_DIGITS = 4300   # Python's own limit on the digits of an int made from text
_OUT_OF_RANGE = 1 << 64   # beyond every field's range (vocabulary.UINT_LIMIT)


def lines_of(stream, limit=MAX_LINE):
    """The lines of a binary stream (with their newlines); None for a line over limit bytes, its
    bytes skipped unkept: memory stays bounded whatever the input (/dev/zero is one line). A UTF-8
    byte order mark at the start of the first line is left out (it counts toward the limit)."""
    readline = stream.readline
    raw = readline(limit + 1)
    bom = raw.startswith(BOM)
    while raw:
        if len(raw) <= limit or raw[-1:] == b"\n":
            if bom:
                raw, bom = raw[len(BOM):], False
            yield raw
        else:
            bom = False
            while raw and raw[-1:] != b"\n":
                raw = readline(_SKIP_CHUNK)
            yield None
        raw = readline(limit + 1)


def _no_constant(name):
    raise ValueError("%s is not JSON" % name)


def _int(text):   # beyond Python's digit limit: valid JSON, out of every field's range
    if len(text) <= _MAX_DIGITS:
        return int(text)
    return -_OUT_OF_RANGE if text[0] == "-" else _OUT_OF_RANGE


STRICT = json.JSONDecoder(parse_constant=_no_constant)               # the fast path's
CAREFUL = json.JSONDecoder(parse_constant=_no_constant, parse_int=_int)


_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)")   # one escape of a JSON string
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(r"[][{}]")


def lone_surrogate(text):
    """Whether a valid JSON text has a \\u escape of a surrogate that is not half of a pair."""
    low_at = None   # where the low half after a high one must be
    for m in _ESCAPE.finditer(text):
        u = int(m.group(1), 16) if m.group(1) else -1
        if low_at is not None:
            if m.start() != low_at or not 0xDC00 <= u <= 0xDFFF:
                return True
            low_at = None
        elif 0xD800 <= u <= 0xDBFF:
            low_at = m.end()
        elif 0xDC00 <= u <= 0xDFFF:
            return True
    return low_at is not None


def too_deep(text):
    """Whether a valid JSON text nests over MAX_DEPTH levels (its object is level 1)."""
    depth = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        depth += 1 if m.group() in "[{" else -1
        if depth > MAX_DEPTH:
            return True
    return False
