#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/install_package.sh: cudapool as a package. `cmake --install` into a temporary prefix P
# gives P/lib/libcudapool.so, P/bin/cudapool (the launcher) and the tools, the Python package (the
# modules of scripts/cudapool_analysis, none of the test oracles of tests/oracle) with the page's
# assets and the demo's log in P/share/cudapool, the docs in P/share/doc/cudapool; the
# launcher then works from P alone (run, config, replay, demo, tune, report (a zstd log too, through
# P's cudapool-cat), report --html [--tune], export --perfetto; build and test say they need a
# source checkout; every command answers --help and --version, its usage naming `cudapool`), with CUDAPOOL_BUILD_DIR pointing nowhere. The same from a copy of P at another path with P removed (everything is found
# relative to bin/cudapool), and through a symbolic link to the launcher. With cpack and dpkg-deb:
# the .deb (its control fields and files), unpacked at another path and run from there. Not here:
# what the tools compute (their own tests); the source-tree launcher (the other cli tests).
# Needs web/node_modules/uplot (npm ci --prefix web: scripts/cudapool setup, CI's first step).
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
build="$CUDAPOOL_BUILD_DIR"
check_html="$src/tests/cli/check_report_html.py"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

[ -f "$src/web/node_modules/uplot/dist/uPlot.iife.min.js" ] || fail "the HTML report's charting" \
  "library is missing (web/node_modules/uplot): run \`npm ci --prefix $src/web\` (scripts/cudapool" \
  "setup does), then this test again"
shim_built=0
[ -f "$build/shim/libcudapool.so" ] && shim_built=1
# What the launcher puts before the shim in LD_PRELOAD: a sanitizer build's runtime and a colon
# (CUDAPOOL_TEST_PRELOAD, tests/CMakeLists.txt), or nothing.
preload_runtime="${CUDAPOOL_TEST_PRELOAD:-}"
preload_runtime="${preload_runtime%"$build/shim/libcudapool.so"}"
version=$(sed -n 's/^project(cudapool VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || fail "no version in the project() line of CMakeLists.txt"
ex_src="$src/examples/logs/training-loop.jsonl"

# ---- the install: what goes where ---------------------------------------------------------------
cmake --install "$build" --prefix "$tmp/p" >"$tmp/install.out" 2>&1 \
  || fail "cmake --install: $(tail -5 "$tmp/install.out")"
P="$tmp/p"
for f in bin/cudapool bin/cudapool-config bin/cudapool-replay bin/cudapool-tune bin/cudapool-cat bin/cudapool-analyze; do
  [ -f "$P/$f" ] && [ -x "$P/$f" ] || fail "$f: not installed, or not executable"
done
for f in share/cudapool/cudapool_analysis/__main__.py \
         share/cudapool/cudapool_analysis/page/uplot/uPlot.iife.min.js \
         share/cudapool/cudapool_analysis/page/uplot/uPlot.min.css \
         share/cudapool/examples/training-loop.jsonl \
         share/doc/cudapool/README.md share/doc/cudapool/docs/images/report.png; do
  [ -f "$P/$f" ] || fail "$f: not installed"
done
for doc in "$src"/docs/*.md; do
  cmp -s "$doc" "$P/share/doc/cudapool/docs/${doc##*/}" || fail "docs/${doc##*/}: not installed"
done
cmp -s "$ex_src" "$P/share/cudapool/examples/training-loop.jsonl" || fail "the demo's log differs"
# The Python package's modules are the source folder's, and the engine's test oracles (tests/oracle,
# each opening with ORACLE_MARK: issue 27) are not installed.
ORACLE_MARK="A test oracle of the analysis engine"
(cd "$src/scripts/cudapool_analysis" && ls -- *.py) >"$tmp/modules.want"
(cd "$P/share/cudapool/cudapool_analysis" && ls -- *.py) >"$tmp/modules.got"
cmp -s "$tmp/modules.want" "$tmp/modules.got" || fail "the installed package's modules are not" \
  "scripts/cudapool_analysis's: $(diff "$tmp/modules.want" "$tmp/modules.got" | head -5)"
if grep -rlF "$ORACLE_MARK" "$P/bin" "$P/share/cudapool" >"$tmp/names"; then
  fail "test oracles installed: $(head -3 "$tmp/names")"
fi
if [ "$shim_built" -eq 1 ]; then
  [ -f "$P/lib/libcudapool.so" ] || fail "lib/libcudapool.so: not installed"
else
  [ ! -e "$P/lib/libcudapool.so" ] || fail "lib/libcudapool.so installed by a build without the shim"
fi
# Nothing in the install names the build or source tree (a prefix can move).
if grep -rlF -e "$build" -e "$src/" "$P/bin/cudapool" "$P/share" >"$tmp/names" 2>/dev/null; then
  fail "files naming the build or source tree: $(head -3 "$tmp/names")"
fi

# The build tree's own answers, to compare with the install's.
"$build/tools/cudapool-config" 'max_split_size_mb:128' >"$tmp/config.want"

# ---- check_prefix P: the launcher from P, and nothing from the build tree ----------------------
mkdir "$tmp/work"
cp "$src/tests/cli/fixtures/normal.jsonl" "$tmp/work/normal.jsonl"
# inst P ARGS...: P/bin/cudapool ARGS from a neutral folder; stdout in out, stderr in err.
inst() {
  local p=$1
  shift
  (cd "$tmp/work" && CUDAPOOL_BUILD_DIR="$tmp/no-build-here" "$p/bin/cudapool" "$@") \
    >"$tmp/out" 2>"$tmp/err"
}
ok() { "$@" || fail "cudapool ${*:2}: exit $?: $(head -c 600 "$tmp/err")"; }
check_prefix() {
  local p=$1 ex="$1/share/cudapool/examples/training-loop.jsonl" rc
  # run: the installed library first in LD_PRELOAD, the settings passed, the exit status back
  if [ "$shim_built" -eq 1 ]; then
    ok inst "$p" run -- true
    [ ! -s "$tmp/err" ] || fail "$p: run -- true printed: $(cat "$tmp/err")"
    ok inst "$p" run --log "$tmp/x.jsonl" -- true
    ok inst "$p" run --conf 'max_split_size_mb:64' --log "$tmp/x-%p.jsonl" -- \
      sh -c 'echo "$LD_PRELOAD|$CUDAPOOL_CONF|$CUDAPOOL_LOG"'
    [ "$(cat "$tmp/out")" = "$preload_runtime$p/lib/libcudapool.so|max_split_size_mb:64|$tmp/x-%p.jsonl" ] \
      || fail "$p: run set: $(cat "$tmp/out")"
    rc=0; inst "$p" run -- sh -c 'exit 7' || rc=$?
    [ $rc -eq 7 ] || fail "$p: run: exit $rc, not the command's 7"
    # the installed shim in front of the fake driver writes a log the installed report reads
    if [ -f "$build/tests/fakecuda/libcuda.so.1" ]; then
      rm -f "$tmp/shim.jsonl"
      # (python3 as the host: LeakSanitizer off for it, its own leaks at exit are not the shim's)
      ok inst "$p" run --log "$tmp/shim.jsonl" -- env LD_LIBRARY_PATH="$build/tests/fakecuda" \
        ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" python3 -c '
import ctypes
cuda = ctypes.CDLL("libcuda.so.1")
assert cuda.cuInit(0) == 0
ctx = ctypes.c_void_p()
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), 0) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
ptrs = []
for size in (1 << 20, 3 << 20, 1 << 20):
    p = ctypes.c_uint64()
    assert cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(size)) == 0
    ptrs.append(p.value)
for p in ptrs:
    assert cuda.cuMemFree_v2(ctypes.c_uint64(p)) == 0'
      [ -s "$tmp/shim.jsonl" ] || fail "$p: run --log under the fake driver wrote no log"
      ok inst "$p" report "$tmp/shim.jsonl"
      grep -q "the process exited normally" "$tmp/out" || fail "$p: report of the shim's log"
    fi
  else
    rc=0; inst "$p" run -- true || rc=$?
    [ $rc -eq 1 ] && grep -q "libcudapool.so is not in this install" "$tmp/err" \
      || fail "$p: run without the shim installed: exit $rc: $(cat "$tmp/err")"
  fi
  # config, replay, demo, tune: P/bin's tools
  ok inst "$p" config 'max_split_size_mb:128'
  cmp -s "$tmp/out" "$tmp/config.want" || fail "$p: config differs from the build's cudapool-config"
  rc=0; inst "$p" config 'max_split_size_mb:banana' || rc=$?
  [ $rc -eq 1 ] || fail "$p: config of a bad pair: exit $rc, not 1"
  ok inst "$p" replay "$ex"
  "$build/tools/cudapool-replay" "$ex" >"$tmp/replay.want"
  # the same table (the last line, the replay's speed, differs from run to run)
  cmp -s <(grep -v 'events/s)$' "$tmp/out") <(grep -v 'events/s)$' "$tmp/replay.want") || fail "$p: replay differs from the build's cudapool-replay"
  ok inst "$p" demo
  grep -q "memory summary" "$tmp/out" && grep -qF "$ex" "$tmp/out" || fail "$p: demo: $(head -3 "$tmp/out")"
  ok inst "$p" tune --json "$ex"
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["schema"] == "cudapool.tune/1"
assert d["recommendation"], d' "$tmp/out" || fail "$p: tune --json"
  # report, report --html --tune, export --perfetto: the installed package (and its tools)
  ok inst "$p" report "$ex"
  grep -qi "peak" "$tmp/out" || fail "$p: report: no peaks"
  ok inst "$p" report --json "$ex" normal.jsonl
  cp "$tmp/out" "$tmp/report.json"
  (cd "$tmp/work" && PYTHONPATH="$src/scripts" python3 -m cudapool_analysis report --json "$ex" \
    normal.jsonl) >"$tmp/report.want" 2>/dev/null || fail "report --json from the source tree"
  cmp -s "$tmp/report.json" "$tmp/report.want" || fail "$p: report --json differs from the source tree's"
  # a zstd log: decoded by the installed cudapool-cat (the build tree's is out of reach)
  zstd -q -c "$tmp/work/normal.jsonl" >"$tmp/work/normal.zst"
  ok inst "$p" report --json normal.zst
  python3 -c 'import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); a.pop("log"); b.pop("log")
assert a == b' "$tmp/out" <(cd "$tmp/work" && PYTHONPATH="$src/scripts" python3 -m cudapool_analysis \
    report --json normal.jsonl 2>/dev/null) || fail "$p: report --json of a zstd log"
  rm -f "$tmp/page.html" "$tmp/trace.json"    # each install writes them anew (OUT is never replaced)
  ok inst "$p" report --html "$tmp/page.html" --tune "$ex" normal.jsonl
  python3 "$check_html" static "$tmp/page.html" >/dev/null || fail "$p: the page is not self-contained"
  grep -q 'cudapool.tune/1' "$tmp/page.html" || fail "$p: report --html --tune: no tune table"
  ok inst "$p" export --perfetto "$tmp/trace.json" "$ex" normal.jsonl
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert any(e.get("ph") == "C" for e in d["traceEvents"])' "$tmp/trace.json" || fail "$p: export --perfetto"
  # what an installed copy does not do
  for c in build test; do
    rc=0; inst "$p" "$c" || rc=$?
    [ $rc -eq 1 ] && grep -q "not available in an installed copy" "$tmp/err" \
      || fail "$p: $c: exit $rc: $(cat "$tmp/err")"
  done
  ok inst "$p" setup
  ok inst "$p" help
  grep -q "This is an installed copy ($p)" "$tmp/out" || fail "$p: help does not say it is installed"
  # the front door of an install: usage lines name `cudapool`, every command answers --help and
  # --version; build and test are listed only as what a source checkout does
  head -n 1 "$tmp/out" | grep -q '^usage: cudapool COMMAND' || fail "$p: help: $(head -n 1 "$tmp/out")"
  if grep -qE '^  (build|test) ' "$tmp/out"; then fail "$p: help lists build or test as commands"; fi
  grep -q '^  setup, build, test   not in this copy' "$tmp/out" || fail "$p: help does not say build and test need a checkout"
  if grep -q 'scripts/cudapool' "$tmp/out"; then fail "$p: help names scripts/cudapool"; fi
  ok inst "$p" --version
  [ "$(cat "$tmp/out")" = "cudapool $version" ] || fail "$p: --version: $(cat "$tmp/out")"
  for c in demo run config replay tune setup build test help report export stats empty-cache snapshot top; do
    ok inst "$p" "$c" --help
    grep -q "^usage: cudapool $c" "$tmp/out" || fail "$p: $c --help: $(head -n 2 "$tmp/out")"
  done
  for c in demo run config replay tune setup build test help; do
    ok inst "$p" "$c" --version
    [ "$(cat "$tmp/out")" = "cudapool $version" ] || fail "$p: $c --version: $(cat "$tmp/out")"
  done
  rc=0; inst "$p" run --bogus || rc=$?
  [ $rc -eq 2 ] && [ "$(head -n 1 "$tmp/err")" = "cudapool run: unknown option --bogus" ] &&
    sed -n 2p "$tmp/err" | grep -q '^usage: cudapool run ' || fail "$p: run --bogus: exit $rc: $(cat "$tmp/err")"
  rc=0; inst "$p" frob || rc=$?
  [ $rc -eq 2 ] && grep -q '^usage: cudapool COMMAND' "$tmp/err" || fail "$p: frob: exit $rc: $(cat "$tmp/err")"
  [ ! -e "$tmp/no-build-here" ] || fail "$p: something was built"
}

check_prefix "$P"
echo "the install in $P: ok"

# ---- moved: a copy at another path, the first one gone --------------------------------------------
mkdir -p "$tmp/elsewhere"
cp -a "$P" "$tmp/elsewhere/q"
rm -rf "$P"
check_prefix "$tmp/elsewhere/q"
echo "the install copied to another path: ok"
# through a link to the launcher (a bin folder on PATH)
mkdir "$tmp/linkbin"
ln -s "$tmp/elsewhere/q/bin/cudapool" "$tmp/linkbin/cudapool"
(cd "$tmp/work" && PATH="$tmp/linkbin:$PATH" cudapool config 'max_split_size_mb:128') >"$tmp/out" \
  2>"$tmp/err" || fail "a link to the launcher: $(cat "$tmp/err")"
cmp -s "$tmp/out" "$tmp/config.want" || fail "a link to the launcher: config differs"

# ---- the .deb -------------------------------------------------------------------------------------
if command -v cpack >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then
  [ -f "$build/CPackConfig.cmake" ] || fail "no CPackConfig.cmake in the build directory"
  cpack -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/deb" >"$tmp/cpack.out" 2>&1 \
    || fail "cpack -G DEB: $(tail -5 "$tmp/cpack.out")"
  deb="$tmp/deb/cudapool_${version}_amd64.deb"
  [ -f "$deb" ] || deb=$(ls "$tmp"/deb/cudapool_"$version"_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] && [ -f "$deb" ] || fail "cpack wrote no cudapool_${version}_*.deb: $(ls "$tmp/deb")"
  [ "$(dpkg-deb -f "$deb" Package)" = cudapool ] || fail ".deb: Package is not cudapool"
  [ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail ".deb: Version is not $version"
  [ -n "$(dpkg-deb -f "$deb" Maintainer)" ] || fail ".deb: no Maintainer"
  dpkg-deb -f "$deb" Depends | grep -Eq '(^|, )python3(,|$| )' \
    || fail ".deb: Depends lacks python3: $(dpkg-deb -f "$deb" Depends)"
  dpkg-deb -c "$deb" | awk '{print $NF}' >"$tmp/deb.list"
  want=(./usr/bin/cudapool ./usr/bin/cudapool-config ./usr/bin/cudapool-replay ./usr/bin/cudapool-tune
        ./usr/bin/cudapool-cat ./usr/bin/cudapool-analyze
        ./usr/share/cudapool/cudapool_analysis/__main__.py
        ./usr/share/cudapool/cudapool_analysis/page/uplot/uPlot.iife.min.js
        ./usr/share/cudapool/examples/training-loop.jsonl
        ./usr/share/doc/cudapool/README.md ./usr/share/doc/cudapool/docs/report.md
        ./usr/share/doc/cudapool/docs/images/report.png)
  [ "$shim_built" -eq 1 ] && want+=(./usr/lib/libcudapool.so)
  for f in "${want[@]}"; do
    grep -qxF "$f" "$tmp/deb.list" || fail ".deb lacks $f"
  done
  if grep -E '__pycache__|\.pyc$' "$tmp/deb.list"; then fail ".deb carries compiled Python"; fi
  sed -n 's|^\./usr/share/cudapool/cudapool_analysis/\([^/]*\.py\)$|\1|p' "$tmp/deb.list" | sort \
    >"$tmp/deb.modules"
  sort "$tmp/modules.want" | cmp -s - "$tmp/deb.modules" || fail ".deb: the package's modules are" \
    "not scripts/cudapool_analysis's: $(sort "$tmp/modules.want" | diff - "$tmp/deb.modules" | head -5)"
  # unpacked at another path (not installed on this machine): it runs from there
  dpkg-deb -x "$deb" "$tmp/root"
  # the licence, the bundled third parties and Debian's copyright and changelog
  doc="$tmp/root/usr/share/doc/cudapool"
  cmp -s "$src/LICENSE" "$doc/LICENSE" || fail ".deb: no LICENSE (Apache-2.0) in usr/share/doc/cudapool"
  cmp -s "$src/NOTICE" "$doc/NOTICE" || fail ".deb: no NOTICE in usr/share/doc/cudapool"
  grep -q '^License: Apache-2.0$' "$doc/copyright" && grep -q '^License: MIT$' "$doc/copyright" \
    && grep -q '^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' \
      "$doc/copyright" || fail ".deb: usr/share/doc/cudapool/copyright is not DEP-5 with both licences"
  zcat "$doc/changelog.gz" >"$tmp/changelog" || fail ".deb: no usr/share/doc/cudapool/changelog.gz"
  head -1 "$tmp/changelog" | grep -qxF "cudapool ($version) unstable; urgency=medium" \
    || fail ".deb: the changelog's first entry is not $version: $(head -1 "$tmp/changelog")"
  grep -qF -- " -- $(dpkg-deb -f "$deb" Maintainer)  " "$tmp/changelog" \
    || fail ".deb: the changelog's maintainer is not the package's"
  # stripped binaries that keep their build ids
  for f in "$tmp/root/usr/bin/"cudapool-* "$tmp/root/usr/lib/libcudapool.so"; do
    [ -f "$f" ] || continue
    readelf -SW "$f" >"$tmp/sections" || fail ".deb: ${f##*/}: not ELF"
    if grep -qE ' \.(symtab|debug_info) ' "$tmp/sections"; then fail ".deb: ${f##*/} is not stripped"; fi
    grep -qF '.note.gnu.build-id' "$tmp/sections" || fail ".deb: ${f##*/} lost its build id"
  done
  inst "$tmp/root/usr" demo || fail "the unpacked .deb: demo: exit $?: $(cat "$tmp/err")"
  grep -q "memory summary" "$tmp/out" || fail "the unpacked .deb: demo printed no summary"
  inst "$tmp/root/usr" report "$tmp/root/usr/share/cudapool/examples/training-loop.jsonl" \
    || fail "the unpacked .deb: report: exit $?: $(cat "$tmp/err")"
  echo "the .deb ($(basename "$deb"), $(wc -l <"$tmp/deb.list") entries): ok"
else
  echo "cpack or dpkg-deb not found: the .deb is not checked"
fi
echo "ok: install_package"
