#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/docs_cover.sh: every option, environment variable and conf key a user can meet is
# documented: named, as an exact token, in README.md or docs/*.md. It collects
#   (a) the options (--NAME) and the CUDAPOOL_*/PYTORCH_* variables that the help texts print:
#       `scripts/cudapool help`, `scripts/cudapool CMD --help` for every command that help lists
#       (which must exit 0 and print a usage line: a command that does not is named), and the C++
#       tools the launcher has no command for (cudapool-cat, cudapool-analyze: BUILD/tools/);
#   (b) the environment variables of the project's tables: the shim's (shim/support/environment.h,
#       kEnvironment), the conf string's (config/environment.h, kConfVariables), and those the
#       launcher and the Python package read (scripts/cudapool's ${CUDAPOOL_*}, the package's
#       os.environ reads);
#   (c) the conf keys and their aliases (config/keys.cpp, the one key table);
# and names each one that no page names (ALLOWED below: the few left out on purpose, with why).
# Not here: whether what the pages say is right (the tools' own tests), the log's vocabulary
# (vocabulary_check.sh), that the shim reads its variables through its table (shim_environment.sh).
# CPU only, bash and Python 3; needs the built tools (CUDAPOOL_BUILD_DIR). A command's --help is
# run with stub cmake/ctest/ninja/npm/apt-get/sudo first on PATH, so that a command that does not
# answer --help (and would build or install instead) fails here and changes nothing.
set -euo pipefail
src="${CUDAPOOL_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
build="${CUDAPOOL_BUILD_DIR:-$src/build}"
[ -x "$build/tools/cudapool-config" ] || { echo "FAIL: $build/tools/cudapool-config not built" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/stubs"
for p in cmake ctest ninja npm apt-get sudo; do
  printf '#!/bin/sh\necho "docs_cover: stub %s called: $*" >&2\nexit 97\n' "$p" >"$tmp/stubs/$p"
  chmod +x "$tmp/stubs/$p"
done
export CUDAPOOL_BUILD_DIR="$build"
PYTHONDONTWRITEBYTECODE=1 STUBS="$tmp/stubs" python3 - "$src" "$build" <<'PY'
import glob, os, re, subprocess, sys

src, build = sys.argv[1], sys.argv[2]
launcher = os.path.join(src, "scripts", "cudapool")
failures = []

# Named nowhere on purpose, each with why. Keep it short: a user-facing name belongs in the docs.
ALLOWED = {
    "--help": "every command's own; argparse and the tools print it in the usage line itself",
    "CUDAPOOL_TEST_COMPRESSION_LIBRARY": "tests only (the shim's table says so): a stand-in for "
                                         "libzstd/libz in the fake-driver tests",
}


def read(path):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        return f.read()


# ---- (a) the help texts ------------------------------------------------------------------------
env = dict(os.environ)
env["PATH"] = os.environ["STUBS"] + ":" + os.environ.get("PATH", "")


def run(argv):
    try:
        p = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=120)
    except subprocess.TimeoutExpired:
        return 124, ""
    return p.returncode, p.stdout.decode("utf-8", "replace")


helps = {}          # where -> text
rc, top = run([launcher, "help"])
if rc != 0:
    failures.append("`scripts/cudapool help` exits %d" % rc)
helps["scripts/cudapool help"] = top
# The commands: the usage text's entries, two spaces in, then the name.
commands = []
for line in top.splitlines():
    m = re.match(r"^  ([a-z][a-z-]*)(?=\s|$)", line)
    if m and m.group(1) not in commands:
        commands.append(m.group(1))
expected = ["demo", "run", "config", "replay", "tune", "report", "export", "stats",
            "empty-cache", "snapshot", "top", "setup", "build", "test"]
missing = [c for c in expected if c not in commands]
if missing:
    failures.append("`scripts/cudapool help` lists no %s (found %s): the check needs updating"
                    % (", ".join(missing), ", ".join(commands) or "none"))
for c in commands:
    if c == "help":
        continue
    where = "scripts/cudapool %s --help" % c
    rc, text = run([launcher, c, "--help"])
    if rc != 0:
        failures.append("`%s` exits %d, not 0 (its first line: %r)"
                        % (where, rc, (text.strip().splitlines() or [""])[0][:160]))
    elif not re.search(r"(?im)^\s*usage\b", text):
        failures.append("`%s` exits 0 but prints no usage line (it ran instead? first line: %r)"
                        % (where, (text.strip().splitlines() or [""])[0][:160]))
    else:
        helps[where] = text     # only a real help text: not what a command did instead
# The C++ tools without a launcher command of their own (those with one were run through it).
for t in ("cudapool-config", "cudapool-replay", "cudapool-tune", "cudapool-cat", "cudapool-analyze"):
    if t[len("cudapool-"):] in commands:
        continue
    path = os.path.join(build, "tools", t)
    where = "%s --help" % t
    if not os.access(path, os.X_OK):
        failures.append("%s: not built" % path)
        continue
    rc, text = run([path, "--help"])
    if rc != 0:
        failures.append("`%s` exits %d, not 0" % (where, rc))
    else:
        helps[where] = text

items = {}          # name -> [where it comes from]


def add(name, where):
    items.setdefault(name, [])
    if where not in items[name]:
        items[name].append(where)


OPTION = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)")
VARIABLE = re.compile(r"(?<![\w$])((?:CUDAPOOL|PYTORCH)_[A-Z][A-Z0-9_]*[A-Z0-9])(?![\w])")
for where, text in helps.items():
    for m in OPTION.finditer(text):
        add(m.group(1), where)
    for m in VARIABLE.finditer(text):
        add(m.group(1), where)

# ---- (b) the environment variables' tables -----------------------------------------------------
table = read("shim/support/environment.h")
start = table.find("kEnvironment[] = {")
shim_vars = re.findall(r'^\s*\{"(CUDAPOOL_[A-Z0-9_]+)", EnvKind::', table[start:], re.M) if start >= 0 else []
if len(shim_vars) < 10:
    failures.append("shim/support/environment.h: %d variables found in kEnvironment (the check "
                    "needs updating)" % len(shim_vars))
for v in shim_vars:
    add(v, "shim/support/environment.h")
conf_env = read("config/environment.h")
m = re.search(r"kConfVariables = \{([^}]*)\}", conf_env)
conf_vars = re.findall(r'"([A-Z_]+)"', m.group(1)) if m else []
if len(conf_vars) < 3:
    failures.append("config/environment.h: kConfVariables not found (the check needs updating)")
for v in conf_vars:
    add(v, "config/environment.h")
for v in re.findall(r"\$\{(CUDAPOOL_[A-Z0-9_]+)", read("scripts/cudapool")):
    add(v, "scripts/cudapool")
for path in sorted(glob.glob(os.path.join(src, "scripts", "cudapool_analysis", "*.py"))):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    rel = os.path.relpath(path, src)
    for v in re.findall(r"environ(?:\.get\(|\[)\s*\"(CUDAPOOL_[A-Z0-9_]+)\"", text):
        add(v, rel)
    # tools.py's table of overrides: {"cudapool-replay": "CUDAPOOL_REPLAY", ...}
    for v in re.findall(r'"cudapool-[a-z]+": "(CUDAPOOL_[A-Z0-9_]+)"', text):
        add(v, rel)

# ---- (c) the conf keys ---------------------------------------------------------------------------
keys = read("config/keys.cpp")
rows = re.findall(r'^\s*\{"([a-z0-9_]+)", "([a-z0-9_]*)", ValueKind::', keys, re.M)
if len(rows) < 10:
    failures.append("config/keys.cpp: %d keys found (the check needs updating)" % len(rows))
for name, alias in rows:
    add(name, "config/keys.cpp")
    if alias:
        add(alias, "config/keys.cpp (alias)")

# ---- every item on a page -----------------------------------------------------------------------
pages = ["README.md"] + sorted(os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "*.md")))
text = "\n".join(read(p) for p in pages)
undocumented = []
for name in sorted(items):
    if name in ALLOWED:
        continue
    if not re.search(r"(?<![\w-])" + re.escape(name) + r"(?![\w-])", text):
        undocumented.append("%s (from %s)" % (name, "; ".join(items[name])))
if undocumented:
    failures.append("%d undocumented (named in neither README.md nor docs/*.md):\n    %s"
                    % (len(undocumented), "\n    ".join(undocumented)))
if failures:
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    sys.exit(1)
print("docs_cover: %d options, variables and conf keys from %d help texts and the tables, each "
      "named in README.md or docs/*.md" % (len(items), len(helps)))
PY
