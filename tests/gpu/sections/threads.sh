# SPDX-License-Identifier: Apache-2.0
# tests/gpu/sections/threads.sh: the GPU suite's section threads: allocations and frees from many
# threads under the default, sync, none (data loss reported as EXPECTED-UNSAFE) and thread-cache
# settings, and without the shim. Sourced by tests/gpu/run.sh (which sets the variables and runs
# test_threads when GPU_TESTS_ONLY names threads, or by default); not a script to run alone, and not
# where shared helpers live (tests/gpu/lib/common.sh).
# shellcheck shell=bash

test_threads() {
  have threads || { fail threads "not built"; return; }
  local rc log
  for mode in shim shim:reuse_fence:sync; do
    local tag=default
    [ "$mode" = shim ] || tag=sync
    run "threads-$tag" 150 "$mode" "$BIN/threads" 3000
    rc=$?
    log="$LOGS/threads-$tag.log"
    preload_check "threads-$tag" $rc "$log"
    verdict "threads-$tag" $rc "$log" "$(grep -o '([0-9]* alloc+free pairs/s)' "$log" | tr -d '()')"
  done
  run threads-none 150 shim:reuse_fence:none "$BIN/threads" 3000
  rc=$?
  log="$LOGS/threads-none.log"
  preload_check threads-none $rc "$log"
  if [ $rc = 1 ] && grep -qE '^ERROR thread [0-9]+: [0-9]+ bad words' "$log" &&
    ! grep -qE 'CUDA error|overlaps a live block|null pointer' "$log"; then
    N_UNSAFE=$((N_UNSAFE + 1))
    echo "EXPECTED-UNSAFE threads-none: blocks were reused before their last kernel ran ($(grep -o 'bad words [0-9]*' "$log" | tail -n 1))"
  else
    verdict threads-none $rc "$log" "reuse_fence:none: no data lost"
  fi
  # Thread caches forced on: with streams beyond the legacy one they stop caching (fences needed);
  # with the legacy stream only they keep blocks, and the data must stay intact.
  run threads-tc 150 shim:thread_cache:always "$BIN/threads" 3000
  rc=$?
  log="$LOGS/threads-tc.log"
  preload_check threads-tc $rc "$log"
  verdict threads-tc $rc "$log" "thread_cache:always, mixed streams: $(grep -o '([0-9]* alloc+free pairs/s)' "$log" | tr -d '()')"
  for mode in shim:thread_cache:always shim:thread_cache:never; do
    local tag=legacy-${mode#shim:thread_cache:}
    run "threads-$tag" 150 "$mode" "$BIN/threads" 3000 --legacy-only
    rc=$?
    log="$LOGS/threads-$tag.log"
    preload_check "threads-$tag" $rc "$log"
    verdict "threads-$tag" $rc "$log" "${mode#shim:}, legacy stream only: $(grep -o '([0-9]* alloc+free pairs/s)' "$log" | tr -d '()')"
  done
  run threads-raw 150 raw "$BIN/threads" 400
  rc=$?
  log="$LOGS/threads-raw.log"
  verdict threads-raw $rc "$log" "no shim, 400 ops per thread; $(grep -o '([0-9]* alloc+free pairs/s)' "$log" | tr -d '()')"
}
