#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/licence_headers.sh: cudapool's licence is stated where a reader and a scanner look for
# it: LICENSE at the root is the Apache License 2.0, NOTICE names the third parties bundled (uPlot,
# MIT), and every source file of the project (C++, CUDA, Python, shell, CMake, the page's HTML,
# CSS and JavaScript, the vocabulary's .def tables) carries `SPDX-License-Identifier: Apache-2.0`
# in its first three lines. Not here: the files the .deb and an install carry
# (install_package.sh).
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
fail() { echo "FAIL: $*" >&2; exit 1; }

head -3 "$src/LICENSE" | grep -q 'Apache License' && grep -q 'Version 2.0, January 2004' "$src/LICENSE" \
  && grep -q 'END OF TERMS AND CONDITIONS' "$src/LICENSE" || fail "LICENSE is not the Apache License 2.0"
grep -q 'Apache License, Version 2.0' "$src/NOTICE" || fail "NOTICE does not name the licence"
grep -q 'uPlot' "$src/NOTICE" && grep -q 'MIT' "$src/NOTICE" || fail "NOTICE does not name uPlot (MIT)"
# uPlot's version in NOTICE is the one web/package.json pins
pinned=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["dependencies"]["uplot"])' \
  "$src/web/package.json")
grep -qF "uPlot $pinned " "$src/NOTICE" || fail "NOTICE names another uPlot than the pinned $pinned"

# The project's own source files: tracked ones in a checkout, else (a source tarball) all of them.
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git -C "$src" ls-files; }
else
  list() { (cd "$src" && find . -path ./build -prune -o -path './build-*' -prune -o \
    -path ./web/node_modules -prune -o -path ./.git -prune -o -type f -print | sed 's|^\./||'); }
fi
checked=0
missing=()
while IFS= read -r f; do
  case "$f" in
    tests/fuzz/corpus/* | */fixtures/* | docs/results/* | packaging/debian/*) continue ;;
    *.cpp | *.c | *.h | *.cu | *.py | *.sh | *.bash | *.def | *.inc | *.in | *.cmake | */CMakeLists.txt \
      | CMakeLists.txt | scripts/cudapool | .ci/run | *.js | *.css | *.html) ;;
    *) continue ;;
  esac
  checked=$((checked + 1))
  head -3 "$src/$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || missing+=("$f")
done < <(list)
[ "$checked" -gt 500 ] || fail "only $checked source files found: is $src the source tree?"
[ "${#missing[@]}" -eq 0 ] || fail "${#missing[@]} of $checked source files carry no" \
  "'SPDX-License-Identifier: Apache-2.0' in their first 3 lines: ${missing[*]:0:20}"
echo "ok: licence_headers ($checked files)"
