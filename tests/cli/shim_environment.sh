#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/shim_environment.sh: the shim's environment variables are written once, in the table of
# shim/support/environment.h: nothing else in shim/ calls getenv with a CUDAPOOL_ name of its own,
# and docs/shim.md (or docs/log-format.md) names every variable of the table.
set -euo pipefail
python3 - "$CUDAPOOL_SOURCE_DIR" <<'PY'
import os, re, sys
root = sys.argv[1]
table = open(os.path.join(root, "shim/support/environment.h"), encoding="utf-8").read()
names = re.findall(r'\{"(CUDAPOOL_[A-Z_]+)"', table)
bad = []
if len(names) < 5:
    bad.append("the table of shim/support/environment.h was not found (%s)" % names)
for d, _, fs in os.walk(os.path.join(root, "shim")):
    for f in fs:
        p = os.path.join(d, f)
        if f.endswith((".cpp", ".h")):
            for m in re.finditer(r'getenv\(\s*"(CUDAPOOL_[A-Z_]+)"', open(p, encoding="utf-8").read()):
                bad.append("%s reads %s itself, not through the table" % (os.path.relpath(p, root), m.group(1)))
docs = "".join(open(os.path.join(root, "docs", n), encoding="utf-8").read()
               for n in ("shim.md", "log-format.md"))
for n in names:
    if "`%s" % n not in docs:
        bad.append("%s is in the table but docs/shim.md and docs/log-format.md do not name it" % n)
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
echo "shim_environment: ok"
