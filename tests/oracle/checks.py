# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/checks.py: A test oracle of the analysis engine (the Python reader's, reader.py):
the header line's and the summary line's fields checked against their kinds
(vocabulary.HEADER_FIELDS, SUMMARY_FIELDS, LEAK_FIELDS, MODULE_FIELDS, ...): a field of the wrong
kind is left out of the object (a leak's field becomes None; a modules entry without a valid
base, end and path is left out whole) and named in a problem, so that no reader of the object
prints a wrong figure from it. The devices are bounded by the reader's devices.DeviceGate: the
header keeps its first MAX_DEVICES entries (the gate learns every listed id), the summary the
entries of devices whose events are taken. reader.LogReader calls these for the lines it hands
over.

Not here: the events (reader.py checks them on its fast path), what the fields mean.
"""

from cudapool_analysis import vocabulary as v
from .devices import MAX_DEVICES

KIND_TEXT = {v.UINT: "an integer from 0 to 2**64-1", v.INT: "a 64-bit integer",
             v.HEX: "a hex string below 2**64", v.STR: "a string", v.BOOL: "true or false",
             v.LIST: "a list", v.OBJECT: "an object", v.HEX_LIST: "a list of hex strings",
             v.STR_LIST: "a list of strings"}


def _bad(entry, fields):
    """The first field of entry (name, kind) that is present and not of its kind, as text."""
    for name, kind in fields:
        if name in entry and not v.fits(entry[name], kind):
            return name, "%s is not %s" % (name, KIND_TEXT[kind])
    return None


def _module_ok(i, m, problem):
    """Whether modules[i] is {base, end, path} (and bias, build_id when there) of their kinds with
    base < end; else a problem."""
    if type(m) is not dict:
        why = "not an object"
    else:
        missing = [n for n, _ in v.MODULE_REQUIRED_FIELDS if n not in m]
        bad = _bad(m, v.MODULE_FIELDS)
        why = ("no " + missing[0]) if missing else bad[1] if bad else None
        if why is None and v.hex_value(m["base"]) >= v.hex_value(m["end"]):
            why = "base %s is not below end %s" % (m["base"], m["end"])
    if why is not None:
        problem("summary modules[%d]: %s: ignored" % (i, why))
    return why is None


def check_header(obj, problem, gate=None):
    """Leaves out of a header object the fields of the wrong kind, and the devices entries that
    are not {id, name, total_memory}; problem(text) for each. gate (devices.DeviceGate), when
    given, learns the ids listed; entries past the first MAX_DEVICES are left out (said once)."""
    for name, kind in v.HEADER_FIELDS + v.HEADER_OPTIONAL_FIELDS + v.HEADER_RANK_FIELDS:
        if name in obj and not v.fits(obj[name], kind):
            problem("header field %s is not %s: ignored" % (name, KIND_TEXT[kind]))
            del obj[name]
    devices = obj.get("devices")
    if devices is None:
        return
    kept = []
    for i, d in enumerate(devices):
        if type(d) is not dict:
            why = "not an object"
        else:
            bad = _bad(d, v.HEADER_DEVICE_FIELDS)
            why = bad[1] if bad else None
            if why is None and "id" in d and not 0 <= d["id"] < v.DEV_LIMIT:
                why = "id %d is not a device ordinal (0 to %d)" % (d["id"], v.DEV_LIMIT - 1)
        if why is None:
            kept.append(d)
        else:
            problem("header devices[%d]: %s: ignored" % (i, why))
    if gate is not None:
        gate.list_header(kept)
    if len(kept) > MAX_DEVICES:
        problem("header devices: %d entries; the first %d are kept (the replay's limit), the "
                "others only admit their devices' events" % (len(kept), MAX_DEVICES))
        del kept[MAX_DEVICES:]
    obj["devices"] = kept


def check_summary(obj, problem, gate=None):
    """Leaves out of a summary object the fields of the wrong kind: its own, a device's entry
    whose key is not an ordinal, a statistic that is not a 64-bit integer, a leak entry that is
    not an object (a leak's field of the wrong kind becomes None), a modules entry that is not
    {base, end, path} with base < end, log_errors' and leaks_omitted's fields; problem(text) for
    each. With a gate (devices.DeviceGate), the entries of devices it does not take (their
    events skipped, or beyond its limit) are left out too, said once."""
    for name, kind in v.SUMMARY_FIELDS + v.SUMMARY_OPTIONAL_FIELDS:
        if name not in ("schema", "action", "devices") and name in obj \
                and not v.fits(obj[name], kind):
            problem("summary field %s is not %s: ignored" % (name, KIND_TEXT[kind]))
            del obj[name]
    devices = obj.get("devices") or {}
    untaken = 0
    for key in list(devices):
        entry = devices[key]
        if not (key.isdigit() and key.isascii() and int(key) < v.DEV_LIMIT):
            problem("summary device %r is not a device ordinal: ignored" % key)
            del devices[key]
            continue
        if type(entry) is not dict:
            problem("summary device %s is not an object: ignored" % key)
            del devices[key]
            continue
        if gate is not None and not gate.may_take(int(key)):
            untaken += 1
            del devices[key]
            continue
        stats = entry.get("stats")
        if stats is None:
            continue
        if type(stats) is not dict:
            problem("summary device %s: stats is not an object: ignored" % key)
            del entry["stats"]
            continue
        for name in [n for n, x in stats.items() if not v.fits(x, v.INT)]:
            problem("summary device %s: statistic %s is not %s: ignored"
                    % (key, name, KIND_TEXT[v.INT]))
            del stats[name]
    if untaken:
        problem("summary devices: %d entries of devices whose events are skipped (see the notes), "
                "or beyond the first %d devices: ignored" % (untaken, MAX_DEVICES))
    leaks = obj.get("leaks")
    if leaks is not None:
        kept = []
        for i, leak in enumerate(leaks):
            if type(leak) is not dict:
                problem("summary leaks[%d] is not an object: ignored" % i)
                continue
            for name, kind in v.LEAK_FIELDS:
                if name not in leak:
                    continue
                x = leak[name]
                ok = v.fits(x, kind) and (name != "dev" or 0 <= x < v.DEV_LIMIT)
                if not ok:
                    problem("summary leaks[%d]: %s is not %s: left out" % (
                        i, name, "a device ordinal" if name == "dev" else KIND_TEXT[kind]))
                    leak[name] = None
            kept.append(leak)
        obj["leaks"] = kept
    modules = obj.get("modules")
    if modules is not None:
        obj["modules"] = [m for i, m in enumerate(modules) if _module_ok(i, m, problem)]
    for field, fields in (("log_errors", v.LOG_ERROR_FIELDS),
                          ("leaks_omitted", v.LEAKS_OMITTED_FIELDS)):
        entry = obj.get(field)
        if entry is None:
            continue
        bad = _bad(entry, fields)
        while bad is not None:
            problem("summary %s: %s: ignored" % (field, bad[1]))
            del entry[bad[0]]
            bad = _bad(entry, fields)
    omitted = obj.get("leaks_omitted")
    if omitted is not None and any(name not in omitted for name, _ in v.LEAKS_OMITTED_FIELDS):
        problem("summary leaks_omitted: not {count, size, block_size}: ignored")
        del obj["leaks_omitted"]
