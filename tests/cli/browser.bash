# SPDX-License-Identifier: Apache-2.0
# tests/cli/browser.bash: the page tests' headless Chromium, one copy (sourced by report_html.sh,
# verdict_agree.sh and tune_full_device.sh, not a test: ctest runs tests/cli/*.sh only). Needs
# $tmp and fail() from the test. Finds Chromium ($CHROMIUM, else the Debian package
# chromium-headless-shell's names) and fails (does not skip) without it; chrome PAGE ARGS... opens
# a page in a fresh profile, offline (every host name unknown), at $window (1400,2400 unless the
# test sets another); browse PAGE NAME writes the DOM after the page's scripts ran to
# $tmp/NAME.dom and Chromium's log to $tmp/NAME.err. Not here: what a test checks in the DOM.
# shellcheck shell=bash
chromium=${CHROMIUM:-}
if [ -z "$chromium" ]; then
  for c in chromium-headless-shell /usr/lib/chromium/headless_shell \
           /usr/lib/chromium/chromium-headless-shell chromium; do
    if command -v "$c" >/dev/null 2>&1; then chromium=$(command -v "$c"); break; fi
  done
fi
[ -n "$chromium" ] && [ -x "$chromium" ] || fail "no headless Chromium${chromium:+ at $chromium}:" \
  "install the Debian package chromium-headless-shell (apt-get install -y chromium-headless-shell," \
  "or scripts/cudapool setup as root)"
window=${window:-1400,2400}
chrome() {
  local page=$1 profile
  shift
  profile=$(mktemp -d "$tmp/profile.XXXX")
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --user-data-dir="$profile" \
    --hide-scrollbars --window-size="$window" --virtual-time-budget=20000 --no-first-run \
    --host-resolver-rules="MAP * ~NOTFOUND" --enable-logging=stderr --v=0 "$@" "file://$page"
}
browse() {
  chrome "$1" --dump-dom >"$tmp/$2.dom" 2>"$tmp/$2.err" \
    || fail "$2: Chromium failed: $(tail -3 "$tmp/$2.err")"
}
