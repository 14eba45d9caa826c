#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/shim_rooms.sh: the rooms of shim/ (shim/rooms.txt, bottom to top; docs/architecture.md):
# no file in shim/ includes ("shim/<room>/...") a file of a room above its own, every folder
# directly under shim/ is a listed room, and every listed room exists. Issue 30: no arrow back up.
set -euo pipefail
python3 - "$CUDAPOOL_SOURCE_DIR" <<'PY'
import os, re, sys
root = sys.argv[1]
shim = os.path.join(root, "shim")
rooms = []
for line in open(os.path.join(shim, "rooms.txt"), encoding="utf-8"):
    line = line.strip()
    if line and not line.startswith("#"):
        rooms.append(line.split(":", 1)[0].strip())
rank = {r: i for i, r in enumerate(rooms)}
bad = []
if len(rank) != len(rooms):
    bad.append("shim/rooms.txt lists a room twice")
folders = sorted(d for d in os.listdir(shim) if os.path.isdir(os.path.join(shim, d)))
bad += ["shim/%s/ is not a room of shim/rooms.txt" % d for d in folders if d not in rank]
bad += ["shim/rooms.txt lists %s, which is not a folder of shim/" % r for r in rooms
        if r not in folders]
inc = re.compile(r'^\s*#\s*include\s+"shim/([^/"]+)/[^"]*"', re.M)
checked = 0
for d, _, fs in os.walk(shim):
    for f in sorted(fs):
        p = os.path.relpath(os.path.join(d, f), root)
        parts = p.split(os.sep)
        if len(parts) < 3 or not f.endswith((".h", ".cpp", ".inc", ".def", ".in")):
            continue
        room = parts[1]
        checked += 1
        for target in inc.findall(open(os.path.join(root, p), encoding="utf-8").read()):
            if target not in rank:
                bad.append("%s includes from shim/%s/, which is not a room" % (p, target))
            elif room in rank and rank[target] > rank[room]:
                bad.append("%s (room %s) includes from %s, a room above it" % (p, room, target))
if checked == 0:
    bad.append("no source file found under %s" % shim)
for b in sorted(set(bad)):
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "shim_rooms: ok"
