#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/control_live.sh: the live commands (cudapool stats, top; docs/control.md) against real
# processes under the shim and the fake driver (tests/fakecuda), issue 29:
#   (1) a process without a socket is told apart: under the shim with CUDAPOOL_CONTROL=1 but no
#       CUDA call yet, under the shim without CUDAPOOL_CONTROL, CUDAPOOL_CONTROL naming another
#       directory, no shim at all; exit 1 at once without --timeout;
#   (2) --timeout S waits for the socket: a process that makes its first CUDA call later (its
#       pid the same: bash execs the program) is answered;
#   (3) the driver's figure (NVML) from a stand-in libnvidia-ml (tests/cli/fake_nvml.c, built
#       here, CUDAPOOL_NVML_LIBRARY) in top --json, top --csv, stats, stats --json, stats --csv,
#       with 24- and 32-byte process entries and CUDA_VISIBLE_DEVICES renumbering; "n/a" (JSON
#       null) without NVML or when its init fails, exit 0; stats --csv has top --csv's columns;
#   (4) snapshot -o over an existing file: refused, then replaced with --force;
#   (5) stats of the launcher `cudapool run --log ... -- PROGRAM &` ($!) answers for PROGRAM.
# Skipped (exit 0, said) when the shim or the fake driver is not built. Not here: the client
# without processes (control_client.sh), the endpoint itself (tests/fakecuda/control_check.py).
source "$(dirname "${BASH_SOURCE[0]}")/common.bash"
build="$CUDAPOOL_BUILD_DIR"
shim="$build/shim/libcudapool.so"
fake="$build/tests/fakecuda"
workload="$fake/control_workload"
[ -f "$shim" ] && [ -x "$workload" ] || { echo "control_live: shim or fake not built: skipped"; exit 0; }
# LD_PRELOAD: the shim, after the sanitizer runtime in a sanitizer build (tests/CMakeLists.txt);
# LeakSanitizer off in the processes started here: bash and sleep are not the shim's to check
preload="${CUDAPOOL_TEST_PRELOAD:-$shim}"
command -v "${CC:-cc}" >/dev/null || { echo "control_live: no C compiler: skipped"; exit 0; }

export XDG_RUNTIME_DIR="$tmp/xdg"
mkdir -m 700 "$XDG_RUNTIME_DIR"
unset CUDAPOOL_CONTROL CUDAPOOL_DISABLE CUDAPOOL_LOG CUDAPOOL_METRICS CUDA_VISIBLE_DEVICES
export CUDAPOOL_NVML_LIBRARY="$tmp/absent/libnvidia-ml.so.1"    # no NVML unless a case says so
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$tmp"' EXIT

# under_shim NAME VAR=VALUE... -- COMMAND...: COMMAND in the background under the shim and the
# fake driver, with the variables; its pid in $started.
under_shim() {
  local name=$1
  shift
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  env LD_LIBRARY_PATH="$fake" LD_PRELOAD="$preload" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
    "${vars[@]}" "$@" >"$tmp/$name.out" 2>&1 &
  started=$!
  pids+=($started)
}
# says WANT ARGS...: `cudapool ARGS` exits 1 at once with WANT in its message.
says() {
  local want=$1 rc=0
  shift
  cudapool "$@" >"$tmp/s.out" 2>"$tmp/s.err" || rc=$?
  [ $rc -eq 1 ] || fail "cudapool $*: exit $rc, not 1: $(cat "$tmp/s.err")"
  has "$want" "$tmp/s.err"
}
gate="$tmp/go"
# a shell under the shim that waits for $gate, then execs the workload (same pid); no CUDA call
# before that
waiting_program="while [ ! -e $gate ]; do sleep 0.05; done; exec $workload $tmp/w1 --rate 200"
mkdir "$tmp/w1" "$tmp/w2"

# (1) Told apart.
under_shim waiting CUDAPOOL_CONTROL=1 -- bash -c "$waiting_program"
w=$started
under_shim nocontrol -- sleep 60
nocontrol=$started
under_shim elsewhere CUDAPOOL_CONTROL="$tmp/elsewhere" -- sleep 60
elsewhere=$started
sleep 60 & plain=$!
pids+=($plain)
for p in $w $nocontrol $elsewhere; do     # each has exec'd its program with the shim loaded
  for i in $(seq 1 600); do
    grep -q libcudapool "/proc/$p/maps" 2>/dev/null && break
    sleep 0.05
  done
done
for i in $(seq 1 600); do
  [ "$(cat /proc/$plain/comm 2>/dev/null)" = sleep ] && break
  sleep 0.05
done
says "process $w (bash) runs under the shim with CUDAPOOL_CONTROL=1 but has made no CUDA call yet: its socket opens at the first one; --timeout S waits for it" stats $w
says "process $nocontrol (sleep) runs under the shim without CUDAPOOL_CONTROL: no control socket" stats $nocontrol
says "its control directory is $tmp/elsewhere, not $XDG_RUNTIME_DIR/cudapool: give --dir $tmp/elsewhere" stats $elsewhere
says "process $plain (sleep) does not run under the shim (no libcudapool loaded)" empty-cache $plain
echo "ok: no socket yet, no CUDAPOOL_CONTROL, another directory and no shim told apart"

# (2) --timeout waits for the socket: the program makes its first CUDA call 1 s after asking.
cudapool stats $w --timeout 60 >"$tmp/wait.out" 2>"$tmp/wait.err" &
asking=$!
sleep 1
touch "$gate"
rc=0
wait $asking || rc=$?
[ $rc -eq 0 ] || fail "stats --timeout 60 while the socket opens: exit $rc: $(cat "$tmp/wait.err")"
has "cudapool stats: pid $w," "$tmp/wait.out"
echo "ok: stats --timeout waited for the socket of pid $w"
rc=0
cudapool stats $nocontrol --timeout 1 >/dev/null 2>"$tmp/s.err" || rc=$?
[ $rc -eq 1 ] || fail "stats --timeout 1 of a process without a socket: exit $rc"
has "without CUDAPOOL_CONTROL: no control socket" "$tmp/s.err"
has "(waited 1" "$tmp/s.err"
echo "ok: stats --timeout 1 of a process that never opens one: $(cat "$tmp/s.err")"

# (3) The driver's figure. Another process under the shim, on "GPU 2" as its
# CUDA_VISIBLE_DEVICES=2 names it (its device 0 is NVML's index 2).
under_shim renumbered CUDAPOOL_CONTROL=1 CUDA_VISIBLE_DEVICES=2 -- "$workload" "$tmp/w2" --rate 200
r=$started
cudapool stats $r --timeout 60 >/dev/null || fail "the second workload does not answer"
${CC:-cc} -shared -fPIC -o "$tmp/libfakenvml.so" "$src/tests/cli/fake_nvml.c" || fail "fake_nvml.c"
nvml() { CUDAPOOL_NVML_LIBRARY="$tmp/libfakenvml.so" FAKE_NVML_DEVICES=3 \
  FAKE_NVML_PROCS="0:1:5,0:$w:123456789,2:$r:987654321,1:$w:1000" "$@"; }
for stride in 24 32; do
  FAKE_NVML_STRIDE=$stride nvml cudapool top --once --json >"$tmp/top.json" || fail "top --json"
  python3 - "$tmp/top.json" "$w" "$r" <<'PY' || fail "top --json, $stride-byte entries: $(cat "$tmp/top.json")"
import json, sys
doc, w, r = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
assert doc["driver_figures"] == "NVML", doc["driver_figures"]
by = {p["pid"]: p for p in doc["processes"]}
assert by[w]["driver_used_bytes"] == 123456789 + 1000, by[w]
assert by[w]["devices"][0]["driver_used_bytes"] == 123456789, by[w]
assert by[r]["driver_used_bytes"] == 987654321, by[r]
assert by[r]["devices"][0]["device"] == 0 and by[r]["devices"][0]["driver_used_bytes"] == 987654321
for p in by.values():
    d = p["devices"][0]
    assert d["reserved_bytes"] > 0 and d["active_bytes"] >= d["allocated_bytes"], d
    assert d["free_bytes"] == d["reserved_bytes"] - d["active_bytes"], d
    assert 0 <= d["fragmentation"] <= 1 and d["ooms"] == 0, d
PY
done
nvml cudapool top --once --csv >"$tmp/top.csv" || fail "top --csv"
header=$(head -1 "$tmp/top.csv")
grep -q "^[0-9.]*,$w,0,[0-9]*,123456789,.*,control_workload " "$tmp/top.csv" ||
  fail "top --csv: no row of pid $w with the driver's figure: $(cat "$tmp/top.csv")"
grep -q "^[0-9.]*,$r,0,[0-9]*,987654321," "$tmp/top.csv" || fail "top --csv: $(cat "$tmp/top.csv")"
nvml cudapool stats $w --csv >"$tmp/stats.csv" || fail "stats --csv"
[ "$(head -1 "$tmp/stats.csv")" = "$header" ] || fail "stats --csv's columns: $(head -1 "$tmp/stats.csv")"
grep -q "^[0-9.]*,$w,0,[0-9]*,123456789," "$tmp/stats.csv" || fail "stats --csv: $(cat "$tmp/stats.csv")"
nvml cudapool stats $w >"$tmp/stats.txt" || fail "stats"
has "Driver (what nvidia-smi shows for pid $w): 117.7 MiB on device 0; 117.7 MiB (123457789 bytes) in all (NVML)" "$tmp/stats.txt"
nvml cudapool stats $r --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["driver_used_bytes"] == 987654321 and d["devices"][0]["driver_used_bytes"] == 987654321, d
' || fail "stats --json: no driver_used_bytes"
nvml cudapool top --once >"$tmp/top.txt" || fail "top"
grep -q "^ *$w  *0 .* 118 MiB " "$tmp/top.txt" || fail "top: $(cat "$tmp/top.txt")"
if awk 'length > 80' "$tmp/top.txt" | grep -q .; then fail "top: a line over 80 columns"; fi
echo "ok: the driver's figure from NVML in top (text, --json, --csv) and stats (text, --json, --csv):"
sed 's/^/  /' "$tmp/top.txt"

# without NVML, or when nvmlInit fails: n/a, null, exit 0
na() { if [ -n "$how" ]; then FAKE_NVML_INIT=9 nvml "$@"; else "$@"; fi; }
for how in "" "init"; do
  na cudapool top --once --json >"$tmp/na.json" || fail "top --json without NVML ($how)"
  python3 -c '
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["driver_figures"].startswith("n/a: "), doc["driver_figures"]
assert all(p["driver_used_bytes"] is None and p["devices"][0]["driver_used_bytes"] is None
           for p in doc["processes"]) and len(doc["processes"]) == 2, doc
' "$tmp/na.json" || fail "top --json without NVML ($how): $(cat "$tmp/na.json")"
  na cudapool top --once --csv | grep -q "^[0-9.]*,$w,0,[0-9]*,n/a," || fail "top --csv: no n/a"
  na cudapool top --once | grep -q "^ *$w  *0 .* n/a " || fail "top: no n/a"
  na cudapool stats $w | grep -q "^Driver (what nvidia-smi shows for pid $w): n/a: " ||
    fail "stats without NVML ($how)"
done
echo "ok: without NVML, or when its init fails: n/a (JSON null), exit 0"

# (4) snapshot -o over an existing file: refused (exit 1, file kept), then --force replaces it.
echo "an earlier file" >"$tmp/now.json"
rc=0
cudapool snapshot $w -o "$tmp/now.json" 2>"$tmp/snap.err" || rc=$?
[ $rc -eq 1 ] || fail "snapshot over an existing file: exit $rc"
has "now.json exists: give --force to replace it" "$tmp/snap.err"
[ "$(cat "$tmp/now.json")" = "an earlier file" ] || fail "snapshot changed the existing file"
cudapool snapshot $w -o "$tmp/now.json" --force 2>"$tmp/snap.err" || fail "snapshot --force: $(cat "$tmp/snap.err")"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["segments"]' "$tmp/now.json" ||
  fail "snapshot --force did not write the snapshot"
echo "ok: snapshot -o an existing file refused, replaced with --force"

# (5) `CUDAPOOL_CONTROL=1 cudapool run --log ... -- PROGRAM &`: $! is the launcher, which with a log
# waits for PROGRAM as its child; stats --timeout follows it to its program (plain builds: the
# launcher preloads the build's shim without a sanitizer's runtime).
if [ "$preload" = "$shim" ]; then
  mkdir "$tmp/w3"
  (cd "$tmp" && CUDAPOOL_CONTROL=1 LD_LIBRARY_PATH="$fake" CUDAPOOL_BUILD_DIR="$build" \
    "$src/scripts/cudapool" run --log "$tmp/launched-%p.jsonl" -- \
    bash -c "while [ ! -e $tmp/go5 ]; do sleep 0.05; done; exec $workload $tmp/w3 --rate 200") \
    >"$tmp/launched.out" 2>&1 &
  launcher=$!
  pids+=($launcher)
  cudapool stats $launcher --timeout 60 >"$tmp/l.out" 2>"$tmp/l.err" &
  asking=$!
  sleep 1
  touch "$tmp/go5"
  rc=0
  wait $asking || rc=$?
  [ $rc -eq 0 ] || fail "stats --timeout of the launcher run --log: exit $rc: $(cat "$tmp/l.err")"
  grep -q "^cudapool stats: pid [0-9]*," "$tmp/l.out" && ! grep -q "^cudapool stats: pid $launcher," \
    "$tmp/l.out" || fail "stats of the launcher did not answer for its program: $(head -3 "$tmp/l.out")"
  cudapool stats $launcher --json >/dev/null || fail "stats of the launcher, its program's socket open"
  touch "$tmp/w3/stop" "$tmp/w3/exit"
  wait $launcher || fail "the launcher: exit $?: $(cat "$tmp/launched.out")"
  ls "$tmp"/launched-*.jsonl >/dev/null || fail "run --log wrote no log"
  echo "ok: stats \$! of \`cudapool run --log ... &\` follows the launcher to its program"
fi
touch "$tmp/w1/exit" "$tmp/w2/exit"
