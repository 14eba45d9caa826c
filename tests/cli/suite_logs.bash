# SPDX-License-Identifier: Apache-2.0
# tests/cli/suite_logs.bash: every log the suite has, for the tests that check the engine against
# the Python oracle on all of them (sourced by analyze_agree.sh and perfetto_agree.sh, after
# common.bash; not a test: ctest runs tests/cli/*.sh only). suite_logs fills the array `logs`:
# the fixtures of tests/cli/fixtures (and the hostile ones hostile_logs.py writes), the bundled
# example (a log of requests only), the parity traces, the replay fuzzer's corpus (inputs that are
# no log at all included), logs made at random and mutated (fixtures/random_logs.py, fixed seeds),
# a long one (80000 events: timelines downsampled, peaks mid-log), and, when the shim is built,
# logs of fake-driver scenarios under it with backtraces (oom events explained, contexts dropped,
# expandable segments, reuse fences). Writes into $tmp. edited_engine OUT CODE writes OUT, an
# engine ($bin) whose document d is changed by the Python CODE: a comparison must catch it.
# Sourcing it sets bin, the engine built (the test fails when there is none), and
# CUDAPOOL_ANALYZE to it, so the package's commands run this build's engine.
bin="$CUDAPOOL_BUILD_DIR/tools/cudapool-analyze"
[ -x "$bin" ] || fail "no $bin (build it)"
export CUDAPOOL_ANALYZE="$bin"
suite_logs() {
  python3 "$fx/hostile_logs.py" "$tmp" omitted cut cut_summary gap made_up huge hostile devices \
    listed unlisted segmented
  python3 "$fx/random_logs.py" "$tmp" 0 30
  python3 "$fx/random_logs.py" "$tmp" long 80000
  logs=("$fx"/*.jsonl "$src"/examples/logs/*.jsonl "$src"/tests/parity/traces/*.jsonl
        "$src"/tests/fuzz/corpus/replay_fuzz/* "$tmp"/*.jsonl)
  local program="$CUDAPOOL_BUILD_DIR/tests/fakecuda/cudart_like" scenario
  if [ -n "${CUDAPOOL_TEST_PRELOAD:-}" ] && [ -x "$program" ]; then
    for scenario in "oom_explained FAKECUDA_DEVICE_MEMORY=67108864" "context_cycles" \
        "two_devices_expandable CUDAPOOL_CONF=expandable_segments:True" \
        "fence_shortcuts CUDAPOOL_CONF=reuse_fence:auto"; do
      set -- $scenario
      env "${@:2}" LD_PRELOAD="$CUDAPOOL_TEST_PRELOAD" CUDAPOOL_LOG="$tmp/shim-$1.jsonl" \
        CUDAPOOL_BACKTRACE=8 LD_LIBRARY_PATH="$CUDAPOOL_BUILD_DIR/tests/fakecuda" \
        "$program" "$1" shim >/dev/null 2>&1 || fail "the scenario $1 under the shim failed"
      [ -s "$tmp/shim-$1.jsonl" ] || fail "the scenario $1 wrote no log"
    done
    logs+=("$tmp"/shim-*.jsonl)
  fi
}

edited_engine() {
  cat >"$1" <<EOF
#!/usr/bin/env bash
"$bin" "\$@" | python3 -c '
import json, sys
d = json.load(sys.stdin)
$2
json.dump(d, sys.stdout)'
EOF
  chmod +x "$1"
}
