#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# tests/cli/version_agree.sh: the project has one version: CMakeLists.txt's project(VERSION) (the
# C++ tools' --version, the .deb's) and scripts/cudapool_analysis/version.py's VERSION (the Python
# commands' and the launcher's --version) are the same number. Not here: what each command prints
# (commands_walk.sh).
set -euo pipefail
src="$CUDAPOOL_SOURCE_DIR"
fail() { echo "FAIL: $*" >&2; exit 1; }
version=$(sed -n 's/^project(cudapool VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
[ -n "$version" ] || fail "no version in the project() line of CMakeLists.txt"
python_version=$(PYTHONPATH="$src/scripts" python3 -c \
  'from cudapool_analysis.version import VERSION; print(VERSION)') ||
  fail "scripts/cudapool_analysis/version.py: no VERSION"
[ "$python_version" = "$version" ] || fail "scripts/cudapool_analysis/version.py says" \
  "$python_version, CMakeLists.txt's project(VERSION) $version: they must be the same number"
echo "ok: version_agree ($version)"
