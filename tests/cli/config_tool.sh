#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/config_tool.sh: cudapool-config as a user runs it: exit codes, the settings table,
# notes on stdout, diagnostics on stderr, which environment variable wins, and that the docs
# name every key. Run by ctest with
# CUDAPOOL_BUILD_DIR set; prints every failed check and exits non-zero if any failed.
set -euo pipefail

tool="${CUDAPOOL_BUILD_DIR:?CUDAPOOL_BUILD_DIR must point at the build directory}/tools/cudapool-config"
[[ -x "$tool" ]] || { echo "FAIL: $tool is not built"; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  echo "  stdout:"; sed 's/^/    /' "$work/out"
  echo "  stderr:"; sed 's/^/    /' "$work/err"
  failures=$((failures + 1))
}

# run EXPECTED_RC [VAR=VALUE ...] -- [ARGS...]: runs the tool with a clean conf environment.
run() {
  local want="$1"
  shift
  local -a vars=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do vars+=("$1"); shift; done
  shift
  local rc=0
  env -u CUDAPOOL_CONF -u PYTORCH_ALLOC_CONF -u PYTORCH_CUDA_ALLOC_CONF "${vars[@]}" \
    "$tool" "$@" >"$work/out" 2>"$work/err" || rc=$?
  if [[ "$rc" != "$want" ]]; then
    local shown="${vars[*]} $*"
    fail "cudapool-config ${shown:0:200} exited $rc, expected $want"
  fi
}

# expect out|err REGEX: the last run's stdout or stderr has a line matching REGEX.
expect() {
  grep -Eq -- "$2" "$work/$1" || fail "expected $1 to match: $2"
}

# expect_not out|err REGEX
expect_not() {
  if grep -Eq -- "$2" "$work/$1"; then fail "expected $1 not to match: $2"; fi
}

# A good string: exit 0, settings with the argument as origin, nothing on stderr.
run 0 -- "max_split_size_mb:128,expandable_segments:True"
expect out '^conf: "max_split_size_mb:128,expandable_segments:True" \(from argument\)$'
expect out '^max_split_size_mb +128 +argument$'
expect out '^expandable_segments +True +argument$'
expect out '^max_non_split_rounding_mb +20 +default$'
expect out '^roundup_power2_divisions +off +default$'
expect_not out '^backend'
[[ -s "$work/err" ]] && fail "a good string wrote to stderr"

# Columns line up: every settings line has its value starting at the same column.
columns="$(tail -n +2 "$work/out" | awk '{ print index($0, $2) }' | sort -u | wc -l)"
[[ "$columns" == 1 ]] || fail "values do not start in one column"

# Empty argument: all defaults, exit 0.
run 0 -- ""
expect out '^conf: "" \(from argument\)$'
expect out '^max_split_size_mb +unlimited +default$'

# A bad value: exit 1, the documented diagnostic on stderr, the default kept.
run 1 -- "max_split_size_mb:10"
expect err '^cudapool: Invalid conf pair: max_split_size_mb:10 \(accepted: an integer >= 20 \(MiB\); keeping: unlimited\)$'
expect out '^max_split_size_mb +unlimited +default$'
expect_not out 'Invalid conf pair'

# Unknown key with a suggestion; '=' instead of ':'; lowercase booleans.
run 1 -- "max_split_size:128"
expect err "did you mean 'max_split_size_mb'"
run 1 -- "max_split_size_mb=128"
expect err "use ':' between key and value"
run 1 -- "expandable_segments:true"
expect err 'expandable_segments:true .*keeping: False'

# An unterminated list and stray commas.
run 1 -- "roundup_power2_divisions:[256:1,512:2"
expect err "list not terminated"
run 1 -- ",max_split_size_mb:128,,"
expect err "stray ','"
expect out '^max_split_size_mb +128 +argument$'

# A list value is shown in list form.
run 0 -- "roundup_power2_divisions:[256:1,512:2,>:4]"
expect out '^roundup_power2_divisions +\[256:1,512:2,>:4\] +argument$'

# PyTorch-only keys: a note on stdout, exit 0, listed as ignored.
run 0 -- "backend:native"
expect out '^cudapool: note: backend:native is a PyTorch-only setting and is ignored$'
expect out '^backend +ignored +argument$'
[[ -s "$work/err" ]] && fail "a note went to stderr"

# garbage_collection_threshold without a memory fraction: a note, not a diagnostic.
run 0 -- "garbage_collection_threshold:0.6"
expect out 'note: garbage_collection_threshold:0.6 has no effect'

# Environment: nothing set, then each variable, then precedence.
run 0 --
expect out '^conf: "" \(from nothing set\)$'
expect out '^max_split_size_mb +unlimited +default$'
run 0 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 --
expect out '^conf: "max_split_size_mb:64" \(from PYTORCH_CUDA_ALLOC_CONF\)$'
expect out '^max_split_size_mb +64 +PYTORCH_CUDA_ALLOC_CONF$'
run 0 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 PYTORCH_ALLOC_CONF=max_split_size_mb:96 --
expect out '^max_split_size_mb +96 +PYTORCH_ALLOC_CONF$'
run 0 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 PYTORCH_ALLOC_CONF=max_split_size_mb:96 \
  CUDAPOOL_CONF=max_split_size_mb:200 --
expect out '^max_split_size_mb +200 +CUDAPOOL_CONF$'
run 0 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64 CUDAPOOL_CONF= --
expect out '^conf: "" \(from CUDAPOOL_CONF\)$'
expect out '^max_split_size_mb +unlimited +default$'
run 1 PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:1 --
expect err 'max_split_size_mb:1 '

# An argument wins over the environment.
run 0 CUDAPOOL_CONF=max_split_size_mb:200 -- "max_split_size_mb:300"
expect out '^max_split_size_mb +300 +argument$'

# Quotes and control characters in the string stay on one conf line.
run 1 -- $'a"b\nc'
expect out '^conf: "a\\"b\\nc" \(from argument\)$'

# Hostile input (issue 18). A size whose bytes overflow 64 bits, or divisions whose 512 bytes x
# divisions would, are rejected with the limit and what is kept.
run 1 -- "max_split_size_mb:18446744073709551615"
expect err '^cudapool: Invalid conf pair: max_split_size_mb:18446744073709551615 \(the size in bytes does not fit in 64 bits \(at most 17592186044415 MiB\); accepted: an integer >= 20 \(MiB\); keeping: unlimited\)$'
expect out '^max_split_size_mb +unlimited +default$'
run 0 -- "max_split_size_mb:17592186044415"
expect out '^max_split_size_mb +17592186044415 +argument$'
run 1 -- "roundup_power2_divisions:9223372036854775808"
expect err 'roundup_power2_divisions:9223372036854775808 \(at most 2\^54 \(18014398509481984\) divisions.*keeping: off\)$'
expect out '^roundup_power2_divisions +off +default$'
# A repeated or out-of-order size in a list is reported like a repeated key; the list is applied.
run 1 -- "roundup_power2_divisions:[256:1,256:4]"
expect err "^cudapool: Invalid conf pair: roundup_power2_divisions:\[256:1,256:4\] \(entry '256:4' sets the same interval as '256:1'; the last one is used; keeping: \[128:1,256:4,>:0\]\)$"
expect out '^roundup_power2_divisions +\[128:1,256:4,>:0\] +argument$'
run 1 -- "roundup_power2_divisions:[512:2,256:1,>:4]"
expect err "entry '256:1' comes after '512:2': list sizes must increase"
# A negative zero is 0.
run 0 -- "per_process_memory_fraction:-0"
expect out '^per_process_memory_fraction +0 +argument$'
# Terminal escapes never reach the terminal raw: ESC, BEL, DEL, a C1 CSI, bytes that are not UTF-8.
run 1 -- $'max_split_size_mb:\e[2J\a\x7f\xc2\x9b\xff'
expect err '^cudapool: Invalid conf pair: max_split_size_mb:\\x1b\[2J\\x07\\x7f\\u009b\\xff \(unexpected'
expect out '^conf: "max_split_size_mb:\\x1b\[2J\\x07\\x7f\\u009b\\xff" \(from argument\)$'
if LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$work/out" "$work/err"; then fail "a control byte was printed raw"; fi
# A long value is cut on a character boundary: the output stays valid UTF-8.
run 1 -- "max_split_size_mb:$(printf 'a%.0s' $(seq 1 76))$(printf '\xc3\xa9%.0s' $(seq 1 20))"
expect err "^cudapool: Invalid conf pair: max_split_size_mb:a{76}\.\.\. \(not an integer"
python3 -c 'import sys; open(sys.argv[1], "rb").read().decode("utf-8")' "$work/err" ||
  fail "a diagnostic cut a UTF-8 character"

# Usage: help exits 0, two arguments or an unknown option exit 2.
run 0 -- --help
expect out '^usage: cudapool config \[STRING\]'
expect out 'max_split_size_mb: an integer >= 20 \(MiB\); default unlimited'
run 0 -- -h
expect out '^usage:'
run 2 -- a:b c:d
expect err '^usage:'
run 2 -- --bogus
expect err 'unknown option'

# A long string (100 KB: one argument may hold at most 128 KiB) caps its diagnostics.
big="$(printf 'max_split_size_mb:1,%.0s' $(seq 1 5000))"
run 1 -- "$big"
expect err '^cudapool: further [0-9]+ diagnostics suppressed$'
lines="$(wc -l <"$work/err")"
[[ "$lines" -le 65 ]] || fail "1 MB input printed $lines diagnostic lines"

# Every key of the key table (as --help lists it) is named in docs/configuration.md.
docs="${CUDAPOOL_SOURCE_DIR:-$(dirname "$0")/../..}/docs/configuration.md"
run 0 -- --help
for key in $(sed -n 's/^  \([a-z_0-9]*\)[: ].*/\1/p' "$work/out"); do
  grep -q "\`$key\`" "$docs" || fail "docs/configuration.md does not name the key $key"
done

if [[ "$failures" -gt 0 ]]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "all cudapool-config checks passed"
