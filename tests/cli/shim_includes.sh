#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/shim_includes.sh: the include rule of shim/ (docs/architecture.md): no two modules
# (X.h with X.cpp) include each other, no header reaches itself through its includes, and every
# "shim/..." include names a file that exists. A guard against the cycles issue 17 removed.
set -euo pipefail
python3 - "$CUDAPOOL_SOURCE_DIR" <<'PY'
import itertools, os, re, sys
root = sys.argv[1]
inc = re.compile(r'^\s*#\s*include\s+"(shim/[^"]+)"', re.M)
files = {}
for d, _, fs in os.walk(os.path.join(root, "shim")):
    for f in fs:
        if f.endswith((".h", ".cpp", ".inc", ".def")):
            p = os.path.relpath(os.path.join(d, f), root)
            files[p] = inc.findall(open(os.path.join(root, p), encoding="utf-8").read())
mod = lambda p: os.path.splitext(p)[0]
deps, bad = {}, []
for p, incs in files.items():
    deps.setdefault(mod(p), set())
    for i in incs:
        if i not in files:
            bad.append("%s includes %s, which does not exist" % (p, i))
        if mod(i) != mod(p):
            deps[mod(p)].add(mod(i))
for a, b in itertools.combinations(sorted(deps), 2):
    if b in deps[a] and a in deps.get(b, ()):
        bad.append("%s and %s include each other" % (a, b))
hdr = {p: [i for i in incs if i.endswith(".h")] for p, incs in files.items() if p.endswith(".h")}
for h in hdr:
    seen, todo = set(), list(hdr[h])
    while todo:
        x = todo.pop()
        if x not in seen:
            seen.add(x)
            todo += hdr.get(x, [])
    if h in seen:
        bad.append("%s reaches itself through its includes" % h)
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "shim_includes: ok"
