#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/vocabulary_check.sh [CUDAPOOL_VOCABULARY]: scripts/cudapool_analysis/vocabulary.py and
# log_schema.json against the C++ that writes the log, so that the two cannot drift: log_schema.json
# is the output of cudapool-vocabulary (made from pool/actions.def, log/shim_actions.def,
# pool/stats.def, log/fields.def; regenerated here when the program is given), the actions and
# statistics in the .def lists are the vocabulary's, the event formatter (log/format_event.cpp)
# takes every key from log/fields.def and spells none, the field names of the header and summary
# formatters (log/format_lines.cpp; the summary's leaks and modules entries included) are
# log/fields.def's, the statistics of pool/stats.cpp for_each_stat(), the oom causes of
# pool/oom.cpp, the action table of docs/log-format.md and its event-field table, which must be
# log/fields.def's row for row. Also imports every module of the package (each checks at import the names
# it uses against the vocabulary). CPU only, Python 3.
set -euo pipefail
src="${CUDAPOOL_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
generator="${1:-}"
if [ -z "$generator" ] && [ -n "${CUDAPOOL_BUILD_DIR:-}" ]; then
  generator="$CUDAPOOL_BUILD_DIR/tools/cudapool-vocabulary"
  [ -x "$generator" ] || { echo "FAIL: $generator not built" >&2; exit 1; }
fi
PYTHONDONTWRITEBYTECODE=1 PYTHONPATH="$src/scripts" python3 - "$src" "$generator" <<'PY'
import importlib, pkgutil, re, subprocess, sys
import cudapool_analysis
from cudapool_analysis import vocabulary as v

src = sys.argv[1]
failures = []


def read(path):
    with open("%s/%s" % (src, path), encoding="utf-8") as f:
        return f.read()


def body(text, opening, path):
    """The text of the C++ function whose definition starts with opening, up to its closing brace
    at the start of a line."""
    start = text.find(opening)
    if start < 0:
        failures.append("%s: %r not found (the check needs updating)" % (path, opening))
        return ""
    end = text.find("\n}\n", start)
    return text[start:end if end >= 0 else len(text)]


def same(what, cpp, py, where="the C++", other="vocabulary.py"):
    """cpp (what the source has) and py (the vocabulary's, or other's), two lists of names, must
    be equal, order included."""
    if cpp == py:
        return
    missing = [n for n in cpp if n not in py]
    extra = [n for n in py if n not in cpp]
    if missing or extra:
        failures.append("%s: in %s, not in %s: %s; in %s, not in %s: %s"
                        % (what, where, other, missing or "none", other, where, extra or "none"))
    else:
        failures.append("%s: the same names in another order:\n  %s: %s\n  %s: %s"
                        % (what, where, cpp, other, py))


def names_of(fields):
    return [n for n, _ in fields]


# 1. actions and statistics: log_schema.json is what cudapool-vocabulary makes from the .def lists
# (pool/actions.def, log/shim_actions.def, pool/stats.def); vocabulary.py reads it.
generator = sys.argv[2]
if generator:
    made = subprocess.run([generator], capture_output=True, text=True, check=True).stdout
    if made != read("scripts/cudapool_analysis/log_schema.json"):
        failures.append("scripts/cudapool_analysis/log_schema.json differs from what %s prints "
                        "from the .def lists: run `ninja -C BUILD refresh-vocabulary`" % generator)
else:
    print("vocabulary_check: no cudapool-vocabulary given; log_schema.json not regenerated")
def_names = lambda path, macro: re.findall(r'^%s\((\w+),\s*"([a-z_]+)"' % macro, read(path), re.M)
same("actions (pool/actions.def, log/shim_actions.def)",
     [n for _, n in def_names("pool/actions.def", "CUDAPOOL_POOL_ACTION")
      + def_names("log/shim_actions.def", "CUDAPOOL_SHIM_ACTION")], list(v.ACTIONS))

# 2. field names the formatters write. The event formatter takes its keys from log/fields.def
# (c.key(F::kName)): it spells none itself, and writes every event field of the table. The header
# and summary formatters spell theirs (\"name\": in each function), which must be the table's.
event_src = read("log/format_event.cpp")
lines_src = read("log/format_lines.cpp")
field = re.compile(r'\\"([a-z_]+)\\":')
event_body = body(event_src, "std::size_t format_event_unchecked(", "log/format_event.cpp")
if field.findall(event_body):
    failures.append("log/format_event.cpp format_event_unchecked spells field names itself (%s): "
                    "take them from log/fields.def (c.key(F::k...))" % field.findall(event_body))
fields_def = read("log/fields.def")
def_events = re.findall(r'^CUDAPOOL_EVENT_FIELD\((\w+),\s*"([a-z_]+)"', fields_def, re.M)
same("event fields written (log/format_event.cpp c.key(F::...)), log_schema.json's",
     sorted(n for e, n in def_events if e in set(re.findall(r'c\.key\(F::(\w+)', event_body))),
     sorted(names_of(v.EVENT_FIELDS + v.OPTIONAL_FIELDS)))
same("event fields (log/fields.def)", [n for _, n in def_events],
     [f["name"] for f in v._SCHEMA["event_fields"]], "log/fields.def")
line_defs = re.findall(r'^CUDAPOOL_LINE_FIELD\((\w+),\s*(\w+),\s*"([a-z_]+)"', fields_def, re.M)
line_ids = {i: n for _, i, n in line_defs}
for function, what, parts, fields in (
        ("std::string format_header(", "header", ("kHeader", "kHeaderDevice"),
         v.HEADER_FIELDS + v.HEADER_OPTIONAL_FIELDS + v.HEADER_DEVICE_FIELDS),
        ("std::string format_summary(", "summary",
         ("kSummary", "kSummaryDevice", "kLeak", "kLeaksOmitted", "kModule", "kLogErrors"),
         v.SUMMARY_FIELDS + v.SUMMARY_OPTIONAL_FIELDS + v.SUMMARY_DEVICE_FIELDS + v.LEAK_FIELDS
         + v.LEAKS_OMITTED_FIELDS + v.MODULE_FIELDS + v.LOG_ERROR_FIELDS)):
    code = body(lines_src, function, "log/format_lines.cpp")
    if field.findall(code):
        failures.append("log/format_lines.cpp %s spells field names itself (%s): take them from "
                        "log/fields.def (key(out, L::k...))" % (function, field.findall(code)))
    used = sorted(set(re.findall(r'key\(\w+, L::(\w+)', code)))
    same("%s fields written (log/format_lines.cpp %s)" % (what, function), used,
         sorted(i for p, i, _ in line_defs if p in parts), "the C++", "log/fields.def")
    same("%s fields (log/fields.def)" % what,
         sorted(set(n for p, _, n in line_defs if p in parts)), sorted(set(names_of(fields))))
if 'kSummaryAction = "%s"' % v.SUMMARY_ACTION not in read("log/fields.h"):
    failures.append("log/fields.h kSummaryAction is not vocabulary.py's SUMMARY_ACTION %r"
                    % v.SUMMARY_ACTION)

# 3. statistics: the lists of pool/stats.def
stats_def = read("pool/stats.def")
for macro, names in (("CUDAPOOL_STAT_ARRAY", v.STAT_ARRAYS), ("CUDAPOOL_STAT_SINGLE", v.STAT_SINGLES),
                     ("CUDAPOOL_STAT_COUNTER", v.STAT_COUNTERS)):
    same("statistics (%s lines of pool/stats.def)" % macro,
         sorted(re.findall(r'^%s\((\w+),' % macro, stats_def, re.M)), list(names))
stats = read("pool/stats.cpp")
types = re.search(r'kTypeNames\s*=\s*\{([^}]*)\}', stats)
same("pools (kTypeNames)", re.findall(r'"([a-z_]+)"', types.group(1)) if types else [],
     list(v.STAT_POOLS))
same("stat fields (add_stat)", re.findall(r'base \+ "\.([a-z_]+)"', stats), list(v.STAT_FIELDS))

# 4. oom causes: pool/oom.cpp oom_cause_name
oom = body(read("pool/oom.cpp"), "std::string_view oom_cause_name(", "pool/oom.cpp")
same("oom causes (pool/oom.cpp oom_cause_name)",
     re.findall(r'case\s+OomCause::k\w+\s*:\s*return\s+"([a-z_]+)"', oom), list(v.OOM_CAUSES))

# 5. docs/log-format.md: the rows of the action table, and the event-field table, which is
# log/fields.def's event fields (log_schema.json) row for row: name, kind, presence, meaning.
doc = read("docs/log-format.md")
def table(heading, stop):
    part = doc[doc.find(heading):]
    return part[:part.find(stop, len(heading))]
same("the actions table of docs/log-format.md",
     sorted(re.findall(r'^\| `([a-z_]+)` \|', table("### Actions", "\n## "), re.M)),
     sorted(v.ACTIONS), "the docs")


def presence_text(f):
    acts = ", ".join("`%s`" % a for a in f["actions"])
    if f["presence"] == "with figures":
        return "%s, with its figures" % acts
    if f["presence"] == "always":
        return "%s only" % acts if acts else "always"
    return "%s, when set" % acts if acts else "when set"


expected = ["| field | type | present | meaning |", "| --- | --- | --- | --- |"] + [
    "| `%s` | %s | %s | %s |" % (f["name"], f["kind"], presence_text(f), f["meaning"])
    for f in v._SCHEMA["event_fields"]]
events_part = table("## Events", "### Actions")
doc_rows = [l for l in events_part.splitlines() if l.startswith("|")]
if doc_rows != expected:
    wrong = [l for l in doc_rows if l not in expected] + ["(missing) " + l for l in expected
                                                          if l not in doc_rows]
    failures.append("the event fields table of docs/log-format.md is not log/fields.def's; "
                    "rows that differ:\n  %s\nthe table, as it should read:\n%s"
                    % ("\n  ".join(wrong[:6]), "\n".join(expected)))

# 6. every module imports (each checks the names it uses at import)
for m in pkgutil.iter_modules(cudapool_analysis.__path__):
    if m.name != "__main__":
        try:
            importlib.import_module("cudapool_analysis." + m.name)
        except Exception as e:
            failures.append("cudapool_analysis.%s does not import: %s" % (m.name, e))

for f in failures:
    print("FAIL: " + f)
if failures:
    sys.exit(1)
print("vocabulary_check: ok (%d actions, %d event fields, %d statistics)"
      % (len(v.ACTIONS), len(v.EVENT_FIELDS) + len(v.OPTIONAL_FIELDS), len(v.STAT_NAMES)))
PY
