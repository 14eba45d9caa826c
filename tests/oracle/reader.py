# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/reader.py: A test oracle of the analysis engine: a second, independent parser of
cudapool.log/1 lines in Python (docs/log-format.md), for the other oracles and the fuzzer
(tests/fuzz/reader_fuzz.py) that check the C++ readers (the engine's lines, the replay's) against
it; the shipped tools read logs with the C++ readers only. The definition lines of Python stacks
(python_frame, python_stack) are neither events nor counted: kept in reader.python (pystacks.py),
each alloc event with a python_stack handed over with its stack resolved (obj[pystacks.RESOLVED]).

    check_log(path)                    # the header; LogError when it cannot be read or is no log
    with open_log(path) as f:          # LogError: a clear message (missing, a directory, empty,
                                       # compressed); stdin or a FIFO: its one copy (inputs.py)
        reader = LogReader(f)
        for (line, seq, t_ns, tid, dev, ctx, action, ptr, size, block_size, segment,
             obj) in reader:           # one tuple per valid event line, in file order
            ...                        # (reader.named(): the same as Event namedtuples)
        reader.header, reader.summary  # the header and summary lines (dicts), or None
        reader.problems                # Problems: malformed lines, counted, with line numbers

Streams a binary stream line by line; memory does not grow with the log (a line longer than
MAX_LINE bytes is malformed and skipped unread). What a valid line is has one definition
(docs/log-format.md, "Valid lines"), which cudapool-replay follows too (tools/replay/log_event.h;
tests/cli/replay_report_agree.sh compares the two): strict JSON in UTF-8 at most MAX_DEPTH levels
deep (jsonline.py), one object; an event's required fields have their kinds
(vocabulary.EVENT_FIELDS) and ranges: seq, t_ns, tid, size, block_size below 2**64, ptr, segment
and stream hex strings below 2**64, dev 0 to 65535, ctx 0 to 255, no number that is not an
integer; anything else is a malformed line (counted, its line number and why in problems,
skipped), never a wrong figure. The header's and the summary's fields of the wrong kind are left
out of the dicts handed over, each with a problem naming the line. Other optional fields of an
event stay in obj unchecked: read them with optional_int() and optional_hex(), which apply the
same rules. The header reaches reader.header as soon as it is read (line 1: before the first
event is yielded); the summary after its line. The events of devices the replay would not keep
(not in the header's list, or beyond the first 256) are counted, not yielded (devices.py).

Not here: what the events mean (the engine; its test oracles tests/oracle/accounting.py,
layout.py), printing (text.py).
"""

import collections

from cudapool_analysis import vocabulary as v
from .checks import check_header, check_summary
from .devices import DeviceGate
from .pystacks import DEFINITION_ACTIONS, RESOLVED, PythonStacks
from cudapool_analysis.inputs import LogError, display_name, open_log
from cudapool_analysis.jsonline import CAREFUL, MAX_DEPTH, MAX_LINE, STRICT, lines_of, lone_surrogate, too_deep

MAX_PROBLEMS = 100   # problems listed with their line numbers (all are counted)
_ABSENT = object()


class Malformed(Exception):
    """A line, or a field, that is not what the format says; the message says why."""


# One valid event. obj is the line's JSON object (optional fields); block_size is size when the
# line has none; segment is None when it has none; ptr and segment are ints.
Event = collections.namedtuple(
    "Event", "line seq t_ns tid dev ctx action ptr size block_size segment obj")
_new_event = tuple.__new__


class Problems:
    """What is wrong in a log: every problem counted, the first `limit` kept as (line, what)."""

    def __init__(self, limit=MAX_PROBLEMS):
        self.limit = limit
        self.count = 0
        self.malformed = 0   # of them, lines skipped as malformed
        self.listed = []

    def add(self, line, what, malformed=False):
        if malformed:
            self.malformed += 1
        self.count += 1
        if len(self.listed) < self.limit:
            self.listed.append((line, what))


def parse_line(raw):
    """A line (bytes) as a JSON object, or raises Malformed. Returns None for a blank line (JSON
    white space only). None for raw (a line over MAX_LINE, lines_of()) raises Malformed."""
    if raw is None:
        raise Malformed("longer than 64 MiB (%d bytes)" % MAX_LINE)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Malformed("not valid UTF-8 (byte %d)" % e.start) from None
    if not text.strip(" \t\r\n"):
        return None
    try:
        obj = CAREFUL.decode(text)
    except ValueError as e:
        raise Malformed("not JSON (%s)" % e) from None
    except RecursionError:
        raise Malformed("not JSON (nested too deeply)") from None
    if type(obj) is not dict:
        raise Malformed("not a JSON object")
    # The text, not the object: the value of a repeated key counts too.
    if "\\u" in text and lone_surrogate(text):
        raise Malformed("a string with a lone surrogate escape")
    if text.count("[") + text.count("{") > MAX_DEPTH and too_deep(text):
        raise Malformed("nested more than %d levels deep" % MAX_DEPTH)
    return obj


def check_uint(name, value):
    """value, an integer from 0 to 2**64-1, or raises Malformed naming the field."""
    if type(value) is not int:
        raise Malformed("%s is not an integer" % name)
    if value < 0:
        raise Malformed("%s is negative (%d)" % (name, value))
    if value >= v.UINT_LIMIT:
        raise Malformed("%s is %d, not below 2**64" % (name, value))
    return value


def check_hex(name, value):
    """The value of a hex string below 2**64 ("0x" or "0X", then hex digits only), or raises
    Malformed naming the field."""
    n = v.hex_digits_value(value)
    if n is None:
        raise Malformed("%s is not a hex string" % name)
    if n >= v.UINT_LIMIT:
        raise Malformed("%s %s is not below 2**64" % (name, value[:40]))
    return n


def check_id(name, value, limit):
    """value, an integer from 0 to limit-1 (a device ordinal, a context number)."""
    if type(value) is not int:
        raise Malformed("%s is not an integer" % name)
    if not 0 <= value < limit:
        raise Malformed("%s is %d, not %s (0 to %d)" % (
            name, value, "a device ordinal" if name == "dev" else "a context number", limit - 1))
    return value


def optional_int(obj, name, default):
    """An optional unsigned field of an event (default when absent); raises Malformed."""
    value = obj.get(name)
    return default if value is None and name not in obj else check_uint(name, value)


def optional_hex(obj, name):
    """An optional hex field of an event as an int, None when absent; raises Malformed."""
    value = obj.get(name)
    return None if value is None and name not in obj else check_hex(name, value)


def decode_event(obj):
    """The decoded fields of an event object: (seq, t_ns, tid, dev, ctx, ptr, size, block_size,
    segment). Raises Malformed when one is missing, of the wrong kind or out of range."""
    try:
        seq, t_ns, tid = obj["seq"], obj["t_ns"], obj["tid"]
        dev, ptr, size = obj["dev"], obj["ptr"], obj["size"]
    except KeyError as e:
        raise Malformed("event without %s" % e) from None
    for name, value in (("seq", seq), ("t_ns", t_ns), ("tid", tid), ("dev", dev), ("size", size)):
        if type(value) is not int:
            raise Malformed("%s is not an integer" % name)
    check_id("dev", dev, v.DEV_LIMIT)
    for name, value in (("seq", seq), ("t_ns", t_ns), ("tid", tid), ("size", size)):
        check_uint(name, value)
    p = check_hex("ptr", ptr)
    ctx = obj.get("ctx", 0)
    if ctx != 0 or "ctx" in obj:
        check_id("ctx", ctx, v.CTX_LIMIT)
    block_size = optional_int(obj, "block_size", size)
    segment = optional_hex(obj, "segment")
    optional_hex(obj, "stream")
    return seq, t_ns, tid, dev, ctx, p, size, block_size, segment


class LogReader:
    """Iterating yields the events of a binary stream, each a plain tuple in Event's order
    (line, seq, t_ns, tid, dev, ctx, action, ptr, size, block_size, segment, obj): the fastest to
    unpack; named() yields the same as Event namedtuples. The other lines go to the attributes
    below. A caller that stops early (break) leaves the rest of the stream unread."""

    def __init__(self, stream, problems=None):
        self.stream = stream
        self.problems = problems if problems is not None else Problems()
        self.header = None          # the header line's object, fields of the wrong kind left out
        self.header_line = None
        self.summary = None         # the summary line's object, likewise
        self.summary_line = None
        self.lines = 0              # lines read
        self.blank_lines = 0
        self.events = 0             # valid events yielded
        self.events_after_summary = 0
        self.notes = []             # remarks about the log that are not problems of a line
        self.devices = DeviceGate()  # whose events are taken: devices.py (the replay's rule)
        self.python = PythonStacks()  # its Python frames and stacks (pystacks.py)

    def named(self):
        """The events as Event namedtuples (slower than the plain tuples of iterating)."""
        for ev in self:
            yield _new_event(Event, ev)

    def __iter__(self):
        scan = STRICT.scan_once
        lineno = 0
        events = 0
        after = 0           # events after the summary line
        summary_seen = 0
        limit, dev_limit, ctx_limit = v.UINT_LIMIT, v.DEV_LIMIT, v.CTX_LIMIT
        admitted, admit = self.devices.admitted, self.devices.admit
        try:
            for raw in lines_of(self.stream):
                lineno += 1
                # The fast path: an event as the shim writes it. Anything else (a header, a
                # summary, a malformed line, unusual whitespace) goes to _careful(), which decides
                # and says why; both take the same lines.
                try:
                    text = raw.decode()
                    # Not ASCII, a negative number, an escape (a lone surrogate?), nesting (too
                    # deep? not in 129 bytes), perhaps: the careful path decides.
                    if (not text.isascii() or "-" in text or "\\" in text
                            or (len(text) > 2 * MAX_DEPTH and ("[" in text or "{" in text[1:])
                                and text.count("[") + text.count("{") > MAX_DEPTH)):
                        raise ValueError
                    obj, end = scan(text, 0)
                    if end != len(text) - 1 or text[end] != "\n":   # more than the newline
                        if end != len(text) and text[end:].strip(" \t\r\n"):
                            raise ValueError
                    action = obj["action"]
                    seq = obj["seq"]
                    t_ns = obj["t_ns"]
                    tid = obj["tid"]
                    dev = obj["dev"]
                    size = obj["size"]
                    ptr = obj["ptr"]
                    ctx = obj.get("ctx", 0)
                    block_size = obj.get("block_size", size)
                    # Hex strings: "0x" and hex digits. Of what int(s, 16) takes besides, an
                    # ASCII line without "-" or "\\" leaves only "_" and " " to refuse.
                    if (type(seq) is not int or type(t_ns) is not int or type(tid) is not int
                            or type(dev) is not int or type(size) is not int
                            or type(ctx) is not int or type(block_size) is not int
                            or type(action) is not str or action == "summary"
                            or action in DEFINITION_ACTIONS
                            or not ptr.startswith("0x") or len(ptr) > 18 or "_" in ptr
                            or " " in ptr):
                        raise ValueError
                    # None of them is negative (no "-" in the line); each is below its limit
                    # (an address of at most 16 hex digits is below 2**64).
                    if (t_ns >= limit or seq >= limit or tid >= limit or size >= limit
                            or block_size >= limit or dev >= dev_limit or ctx >= ctx_limit):
                        raise ValueError
                    ptr = int(ptr, 16)
                    segment = obj.get("segment")
                    if segment is not None:
                        if (not segment.startswith("0x") or len(segment) > 18 or "_" in segment
                                or " " in segment):
                            raise ValueError
                        segment = int(segment, 16)
                    elif "segment" in obj:   # null
                        raise ValueError
                    stream = obj.get("stream", _ABSENT)
                    if stream is not _ABSENT:   # a hex string (not null, not a number)
                        if (not stream.startswith("0x") or len(stream) > 18 or "_" in stream
                                or " " in stream):
                            raise ValueError
                        int(stream, 16)
                except Exception:
                    ev = self._careful(raw, lineno, events)
                    if ev is None:
                        summary_seen = self.summary is not None
                        continue
                    seq, t_ns, tid, dev, ctx, ptr, size, block_size, segment, obj = ev
                    action = obj["action"]
                events += 1
                after += summary_seen
                if dev not in admitted and not admit(dev, lineno):
                    continue
                if action == "alloc" and "python_stack" in obj:   # its stack, resolved
                    obj[RESOLVED] = self.python.resolve(obj["python_stack"])
                yield (lineno, seq, t_ns, tid, dev, ctx, action, ptr, size, block_size, segment,
                       obj)
        finally:
            self.lines = lineno
            self.events = events
            self.events_after_summary = after
            self.notes.extend(self.devices.notes())

    def _careful(self, raw, lineno, events):
        """A line the fast path did not take, checked field by field: the event's decoded fields
        and its object, or None when the line was a header, a summary, blank, or malformed (then
        it is in problems)."""
        try:
            obj = parse_line(raw)
            if obj is None:
                self.blank_lines += 1
                return None
            action = obj.get("action")
            if action is None:
                if "schema" in obj:
                    self._header(obj, lineno, events)
                else:
                    self.problems.add(lineno, "malformed: a JSON object without action", True)
                return None
            if type(action) is not str:
                raise Malformed("action is not a string")
            if action == v.SUMMARY_ACTION:
                self._summary(obj, lineno)
                return None
            if action in DEFINITION_ACTIONS:   # a Python frame or stack: kept, not an event
                problem = self.python.define(obj, action)
                if problem is not None:
                    malformed, what = problem
                    self.problems.add(lineno, ("malformed: " if malformed else "") + what,
                                      malformed)
                return None
            return decode_event(obj) + (obj,)
        except Malformed as e:
            self.problems.add(lineno, "malformed: %s" % e, True)
            return None

    def _header(self, obj, lineno, events):
        schema = obj.get("schema")
        if type(schema) is not str or not schema.startswith(v.LOG_SCHEMA_PREFIX):
            self.problems.add(lineno, "malformed: schema %r is not %sN"
                              % (schema, v.LOG_SCHEMA_PREFIX), True)
            return
        if self.header is not None:
            self.problems.add(lineno, "a second header line: ignored")
            return
        if events or self.summary is not None:
            self.problems.add(lineno, "a header line after events: ignored")
            return
        if lineno != 1:
            self.notes.append("the header is on line %d, not the first line" % lineno)
        if schema != v.LOG_SCHEMA:
            self.notes.append("schema %s: this report reads %s (fields it does not know are "
                              "ignored)" % (schema, v.LOG_SCHEMA))
        check_header(obj, lambda what: self.problems.add(lineno, what), self.devices)
        self.header = obj
        self.header_line = lineno

    def _summary(self, obj, lineno):
        devices = obj.get("devices")
        if devices is not None and not isinstance(devices, dict):   # malformed wherever it is
            self.problems.add(lineno, "malformed: summary devices is not an object", True)
            return
        if self.summary is not None:
            self.problems.add(lineno, "a second summary line: ignored")
            return
        check_summary(obj, lambda what: self.problems.add(lineno, what), self.devices)
        self.summary = obj
        self.summary_line = lineno


def not_a_log(name, lines, problems):
    """The message for an input none of whose lines is a header, an event or a summary."""
    if lines == 0:
        return "%s is empty: not a log (a log has a header line)" % name
    first = problems.listed[0] if problems.listed else None
    return ("%s is not a cudapool log: none of its %d line%s is a header, an event or a summary%s"
            % (name, lines, "" if lines == 1 else "s", " (line %d: %s)" % first if first else ""))


def check_log(path):
    """The reader's check of the input at path before any long work (report, report --html,
    export) or replay (which would make an empty log of anything): its first lines read up to its
    first event. Returns its header (None when it has none); raises LogError when it cannot be
    read (open_log()) or none of its lines is a header, an event or a summary."""
    name = display_name(path)
    try:
        with open_log(path, progress=False) as f:
            reader = LogReader(f)
            for _ in reader:
                break
    except OSError as e:
        raise LogError("cannot read %s: %s" % (name, e.strerror or e)) from None
    if reader.header is None and reader.events == 0 and reader.summary is None:
        raise LogError(not_a_log(name, reader.lines, reader.problems))
    return reader.header


def check_logs(paths):
    """check_log() of each log at paths: (their headers, None for a log that failed; the
    messages of those that failed)."""
    headers, errors = [], []
    for path in paths:
        try:
            headers.append(check_log(path))
        except LogError as e:
            headers.append(None)
            errors.append(str(e))
    return headers, errors
