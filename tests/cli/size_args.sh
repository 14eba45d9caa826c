#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/size_args.sh: the sizes the tools take on the command line (--device-memory of replay
# and tune, tools/replay/bytes_arg.h) in the forms a user writes them: plain bytes, K/M/G/T in any
# case with or without B or iB, all binary (G = GiB = 2^30, as PyTorch and nvidia-smi count), a
# fraction of a unit (rounded down to a byte); anything else refused as a usage error (exit 2) with
# the accepted forms named. Not here: the replay itself (replay_tool.sh).
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
build="$CUDAPOOL_BUILD_DIR"
replay="$build/tools/cudapool-replay"
tune="$build/tools/cudapool-tune"
log="$src/examples/logs/training-loop.jsonl"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# bytes_of SIZE: the device memory the replay simulates with --device-memory SIZE.
bytes_of() {
  "$replay" --quiet --json --device-memory "$1" "$log" >"$tmp/out" 2>"$tmp/err" ||
    fail "--device-memory $1: exit $?: $(head -c 400 "$tmp/err")"
  python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["devices"]
print(next(iter(d.values()))["device_memory"])' "$tmp/out"
}
expect() {
  local got
  got=$(bytes_of "$1")
  [ "$got" = "$2" ] || fail "--device-memory $1: $got bytes, not $2"
}
G=$((1 << 30))
for s in 2g 2G 2GB 2gb 2Gb 2GiB 2gib 2GIB; do expect "$s" $((2 * G)); done
expect 80G $((80 * G))
expect 512M $((512 << 20))
expect 512mib $((512 << 20))
expect 4096k $((4096 << 10))
expect 1T $((1 << 40))
expect 1.5G $((3 * G / 2))
expect 0.5g $((G / 2))
expect 2.25GiB $((9 * G / 4))
expect 85899345920 85899345920
expect 85899345920B 85899345920
expect 1.1K 1126   # 1.1 x 1024 = 1126.4: rounded down

# refused: a usage error that names the accepted forms
refused() {
  local rc=0
  "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ $rc -eq 2 ] || fail "$*: exit $rc, not 2"
  grep -qF "512M, 80G, 2GB, 2gib, 1.5T" "$tmp/err" || fail "$*: the accepted forms not named: $(cat "$tmp/err")"
  grep -qF "G = GiB = 2^30" "$tmp/err" || fail "$*: the unit's meaning not said: $(cat "$tmp/err")"
  grep -q '^usage: cudapool ' "$tmp/err" || fail "$*: no usage line: $(cat "$tmp/err")"
}
for s in lots 2X 2GG 2Gi 1.5 -1 "2 G" .5G 1.G 0 "" 1.0000000001G; do
  refused "$replay" --device-memory "$s" "$log"
done
refused "$tune" --device-memory 2Q "$log"
# too large or too small for the tool: its own bound, said
rc=0; "$replay" --device-memory 17T "$log" 2>"$tmp/err" >/dev/null || rc=$?
[ $rc -eq 2 ] && grep -q "16T at most" "$tmp/err" || fail "17T: exit $rc: $(cat "$tmp/err")"
rc=0; "$replay" --device-memory 99999999999999999999 "$log" 2>"$tmp/err" >/dev/null || rc=$?
[ $rc -eq 2 ] || fail "a size past 64 bits: exit $rc"
# tune takes the same forms
"$tune" --quiet --json --device-memory 2gb "$log" >"$tmp/tune.json" 2>"$tmp/err" ||
  fail "tune --device-memory 2gb: $(head -c 300 "$tmp/err")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
assert d["logs"][0]["device_memory"] == 2 << 30, d["logs"][0]["device_memory"]' "$tmp/tune.json" ||
  fail "tune --device-memory 2gb: not 2 GiB"
# --help says the rule
"$replay" --help >"$tmp/help" && grep -qF "G = GiB = 2^30 bytes" "$tmp/help" ||
  fail "replay --help does not say what G means"
"$tune" --help >"$tmp/help" && grep -qF "G = GiB = 2^30 bytes" "$tmp/help" ||
  fail "tune --help does not say what G means"
echo "ok: size_args"
