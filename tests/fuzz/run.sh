#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/fuzz/run.sh [SECONDS]: builds the libFuzzer targets (tests/fuzz/*_fuzz.cpp) with clang in
# $CUDAPOOL_FUZZ_BUILD_DIR (default build-fuzz/ in the source tree), then for each target:
#   1. replays every input of its checked-in seed corpus tests/fuzz/corpus/<target>/ once
#      (regression), and
#   2. fuzzes for SECONDS (default 60; 0: regression only) from a scratch copy of that corpus
#      (BUILD/fuzz-work/<target>/corpus; the checked-in corpus is never written).
# Limits: 5 s per input, 2048 MB resident. Exits 1 if any target crashed, leaked, timed out, ran
# out of memory or broke an invariant, after printing each reproducer's path (kept under
# BUILD/fuzz-work/<target>/artifacts/; replay one with `BUILD/tests/fuzz/<target> FILE`), and 2 on
# a usage or build error. Needs clang and libFuzzer (Debian: clang, libclang-rt-14-dev), cmake,
# ninja or make, nlohmann-json3-dev and catch2 (the test tree's configure needs them). Not a ctest
# test, and nothing here fuzzes the shim or the Python tools.
set -euo pipefail

seconds="${1:-60}"
if [[ $# -gt 1 || ! "$seconds" =~ ^[0-9]+$ ]]; then
  echo "usage: tests/fuzz/run.sh [SECONDS]   (time to fuzz each target; 0: replay the seeds only)" >&2
  exit 2
fi
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${CUDAPOOL_FUZZ_BUILD_DIR:-$src/build-fuzz}"
fuzz_src="$src/tests/fuzz"
limits=(-timeout=5 -rss_limit_mb=2048)

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi
mkdir -p "$build"
echo "== configure $build"
# RelWithDebInfo at -O1 and without NDEBUG: fast enough to fuzz, and assertions stay on.
if ! cmake -S "$src" -B "$build" "${generator[@]}" \
    -DCMAKE_C_COMPILER="${CC:-clang}" -DCMAKE_CXX_COMPILER="${CXX:-clang++}" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCUDAPOOL_FUZZ=ON -DCUDAPOOL_BUILD_SHIM=OFF -DCUDAPOOL_LTO=OFF >"$build/configure.log" 2>&1; then
  cat "$build/configure.log" >&2
  echo "tests/fuzz/run.sh: configure failed" >&2
  exit 2
fi
rm -f "$build/configure.log"
echo "== build"
cmake --build "$build" --target fuzz_targets -j "$(nproc)" || {
  echo "tests/fuzz/run.sh: build failed" >&2
  exit 2
}

export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=1:abort_on_error=0"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}${UBSAN_OPTIONS:+:}print_stacktrace=1:halt_on_error=1"

failed=()
shopt -s nullglob
sources=("$fuzz_src"/*_fuzz.cpp)
[[ ${#sources[@]} -gt 0 ]] || { echo "tests/fuzz/run.sh: no tests/fuzz/*_fuzz.cpp" >&2; exit 2; }
for source in "${sources[@]}"; do
  target="$(basename "$source" .cpp)"
  binary="$build/tests/fuzz/$target"
  seeds="$fuzz_src/corpus/$target"
  work="$build/fuzz-work/$target"
  seed_files=("$seeds"/*)
  if [[ ! -x "$binary" ]]; then
    echo "FAIL $target: $binary was not built"
    failed+=("$target")
    continue
  fi
  if [[ ${#seed_files[@]} -eq 0 ]]; then
    echo "FAIL $target: no seed corpus in ${seeds#"$src"/}/"
    failed+=("$target")
    continue
  fi
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"

  # 1. Regression: each checked-in input once, alone, so that a failure names its file.
  echo "== $target: replaying ${#seed_files[@]} seed inputs"
  bad_seeds=0
  for seed in "${seed_files[@]}"; do
    if ! "$binary" "${limits[@]}" "$seed" >"$work/seed.log" 2>&1; then
      echo "FAIL $target: seed ${seed#"$src"/} fails; reproducer: $seed"
      tail -n 30 "$work/seed.log" | sed 's/^/    /'
      bad_seeds=$((bad_seeds + 1))
    fi
  done
  if [[ "$bad_seeds" -gt 0 ]]; then
    failed+=("$target")
    continue
  fi

  # 2. Fuzzing from a scratch copy of the seeds.
  [[ "$seconds" -gt 0 ]] || continue
  cp "${seed_files[@]}" "$work/corpus/"
  echo "== $target: fuzzing for $seconds s"
  rc=0
  "$binary" "${limits[@]}" -max_total_time="$seconds" -print_final_stats=1 \
    -artifact_prefix="$work/artifacts/" "$work/corpus" >"$work/fuzz.log" 2>&1 || rc=$?
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n 1)"
  artifacts=("$work/artifacts"/*)
  if [[ "$rc" -ne 0 || ${#artifacts[@]} -gt 0 ]]; then
    echo "FAIL $target: exit status $rc after ${runs:-?} runs; log: $work/fuzz.log"
    grep -E "^==[0-9]+==ERROR|^SUMMARY|runtime error|broken promise|^  " \
      "$work/fuzz.log" | head -n 20 | sed 's/^/    /' || true
    for artifact in "${artifacts[@]}"; do
      echo "    reproducer: $artifact   (replay: $binary $artifact)"
    done
    failed+=("$target")
  else
    corpus_size="$(find "$work/corpus" -type f | wc -l)"
    echo "ok   $target: ${runs:-?} runs in $seconds s, no failure; working corpus $corpus_size inputs"
  fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "tests/fuzz/run.sh: failed: ${failed[*]}"
  exit 1
fi
echo "tests/fuzz/run.sh: all ${#sources[@]} fuzz targets passed"
