# SPDX-License-Identifier: Apache-2.0
"""tests/oracle/devices.py: A test oracle of the analysis engine (the Python reader's, reader.py):
which devices' events a reader of one log takes, by the replay's rule
(tools/replay/replayer_pools.cpp): when the header lists devices, the events of any other device
are skipped; of the others, the first MAX_DEVICES devices to appear are taken and the events of
any further one skipped. Each kind is counted and said once, in the replay's words. So whatever a
log names (65536 device ordinals), every reader's per-device state and output is bounded: the
report's sections, the page's charts, the exports' tracks.

reader.LogReader holds one DeviceGate (reader.devices): it gives it the header's devices (before
any event) and asks it about each event's dev; checks.py asks it about the summary's devices.
Not here: reading lines (reader.py), what a device's events mean (the engine).
"""

MAX_DEVICES = 256    # tools/replay/replayer.h kMaxPools: the pools the shim and the replay keep
LISTED_SHOWN = 8     # device ids named in a note


class DeviceGate:
    """The devices of one log whose events are taken (admitted), and what was skipped."""

    def __init__(self):
        self.listed = None          # the header's device ids (a frozenset), None: no list
        self.admitted = set()
        self.unlisted = [0, set(), None]   # events, devices, first line: not in the header
        self.over = [0, set(), None]       # events, devices, first line: beyond MAX_DEVICES

    def list_header(self, devices):
        """The header's devices entries (checked): their ids are the devices it lists."""
        ids = frozenset(d["id"] for d in devices if type(d) is dict and type(d.get("id")) is int)
        self.listed = ids or None

    def may_take(self, dev):
        """Whether dev is, or could still be, admitted (listed, and within the limit)."""
        return dev in self.admitted or ((self.listed is None or dev in self.listed)
                                        and len(self.admitted) < MAX_DEVICES)

    def admit(self, dev, line):
        """Whether an event of dev (at line) is taken; a skipped one is counted."""
        if self.may_take(dev):
            self.admitted.add(dev)
            return True
        skipped = self.unlisted if self.listed is not None and dev not in self.listed \
            else self.over
        skipped[0] += 1
        skipped[1].add(dev)
        if skipped[2] is None:
            skipped[2] = line
        return False

    def skipped_events(self):
        """The events skipped so far."""
        return self.unlisted[0] + self.over[0]

    def skipped(self, dev):
        """Whether events of dev were skipped."""
        return dev in self.unlisted[1] or dev in self.over[1]

    def notes(self):
        """What was skipped, in the replay's words (one note per kind), with the first line."""
        out = []
        events, devices, line = self.unlisted
        if events:
            ids = sorted(self.listed)
            names = ", ".join(str(i) for i in ids[:LISTED_SHOWN]) + (
                ", ..." if len(ids) > LISTED_SHOWN else "")
            out.append("an event of a device the header does not list (its devices: %s), first "
                       "at line %d: skipped, as are all such events: %d events of %d devices"
                       % (names, line, events, len(devices)))
        events, devices, line = self.over
        if events:
            out.append("an event of a device beyond the first %d devices (the replay keeps at most "
                       "%d pools, as the shim does), first at line %d: skipped, as are all such "
                       "events: %d events of %d devices"
                       % (MAX_DEVICES, MAX_DEVICES, line, events, len(devices)))
        return out
