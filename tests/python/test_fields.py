# SPDX-License-Identifier: Apache-2.0
"""tests/python/test_fields.py: the Python side against the one definition of the log's fields
(log/fields.def, which cudapool-vocabulary writes into log_schema.json): vocabulary.py's field
lists are the schema's, each kind one vocabulary.py knows; and every key the modules that read the
log's lines take from a line (obj["name"], obj.get("name"), "name" in obj, found in their source)
is a field of the schema, but for the few keys of dicts those modules make themselves (listed
below, each with its reason). Also that the scan finds a key that is no field.
"""

import ast
import json
import os

import oracle
from cudapool_analysis import vocabulary as v

PACKAGE = os.path.dirname(os.path.abspath(v.__file__))
ORACLE = os.path.dirname(os.path.abspath(oracle.__file__))   # the engine's test oracles

# The modules that read the lines of a log (header, events, summary) as dicts: the package's, and
# the test oracles' (tests/oracle, the Python reader among them).
LOG_READERS = ("clock", "frames")
ORACLE_LOG_READERS = ("reader", "checks", "devices", "accounting", "leaks", "oom", "replayed",
                      "timeline")
# Keys of dicts these modules make themselves, not of a line.
OWN_KEYS = {
    "leaks": {"why",                            # agreement(): why a leak entry does not agree
              # by_site(): its groups of blocks alive at the end and the kinds' totals
              "blocks", "bytes", "first_seq", "first_t", "groups", "last_seq", "last_t"},
    "oom": {"device_free_known"},  # oom_figures(): the oom event's figures, decoded
}


def schema():
    with open(os.path.join(PACKAGE, "log_schema.json"), encoding="utf-8") as f:
        return json.load(f)


def keys_read(source):
    """The string keys a Python source takes from dicts: d["k"], d.get("k", ...), "k" in d."""
    found = set()
    for n in ast.walk(ast.parse(source)):
        if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant):
            found.add(n.slice.value)
        elif (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
              and n.func.attr == "get" and n.args and isinstance(n.args[0], ast.Constant)):
            found.add(n.args[0].value)
        elif (isinstance(n, ast.Compare) and isinstance(n.left, ast.Constant)
              and any(isinstance(o, (ast.In, ast.NotIn)) for o in n.ops)):
            found.add(n.left.value)
    # Only names: reader.py also tests single characters of a line ("_" in ptr, "\\" in line).
    return {k for k in found if type(k) is str and len(k) > 1 and k.replace("_", "").isalpha()}


def field_names():
    s = schema()
    return ({f["name"] for f in s["event_fields"]} | {f["name"] for f in s["line_fields"]})


def test_vocabulary_lists_are_the_schemas():
    s = schema()
    events = [(f["name"], f["kind"]) for f in s["event_fields"]]
    assert sorted(v.EVENT_FIELDS + v.OPTIONAL_FIELDS) == sorted(events)
    assert [n for n, _ in v.EVENT_FIELDS] == ["seq", "t_ns", "tid", "dev", "action", "ptr", "size"]
    for part, fields in (("header", v.HEADER_FIELDS + v.HEADER_OPTIONAL_FIELDS),
                         ("header_device", v.HEADER_DEVICE_FIELDS),
                         ("summary", v.SUMMARY_FIELDS + v.SUMMARY_OPTIONAL_FIELDS),
                         ("summary_device", v.SUMMARY_DEVICE_FIELDS), ("leak", v.LEAK_FIELDS),
                         ("leaks_omitted", v.LEAKS_OMITTED_FIELDS), ("module", v.MODULE_FIELDS),
                         ("log_errors", v.LOG_ERROR_FIELDS)):
        assert sorted(fields) == sorted((f["name"], f["kind"]) for f in s["line_fields"]
                                        if f["part"] == part), part
    for f in s["event_fields"] + s["line_fields"]:
        assert f["kind"] in v.PYTHON_TYPES, f
    assert v.EVENT_FIELD_ACTIONS["cache_hit"] == {"alloc"}
    assert v.EVENT_FIELD_ACTIONS["seq"] == frozenset()
    assert set(v.OOM_FIGURES) == {n for n, a in v.EVENT_FIELD_ACTIONS.items()
                                  if a == {"oom"} and n != "cause"}


def test_every_key_the_log_readers_take_is_a_field():
    names = field_names()
    for folder, module in ([(PACKAGE, m) for m in LOG_READERS]
                           + [(ORACLE, m) for m in ORACLE_LOG_READERS]):
        with open(os.path.join(folder, module + ".py"), encoding="utf-8") as f:
            read = keys_read(f.read())
        unknown = read - names - OWN_KEYS.get(module, set())
        assert not unknown, "%s.py reads keys that are no field of log/fields.def: %s" % (
            module, sorted(unknown))
        stale = OWN_KEYS.get(module, set()) - read
        assert not stale, "%s.py: OWN_KEYS lists keys it no longer reads: %s" % (module, stale)


def test_the_scan_finds_a_key_that_is_no_field():
    source = 'def f(obj):\n    return obj["colour"], obj.get("size"), "hue" in obj, "_" in obj\n'
    assert keys_read(source) == {"colour", "size", "hue"}
    assert keys_read(source) - field_names() == {"colour", "hue"}
