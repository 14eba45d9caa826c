# SPDX-License-Identifier: Apache-2.0
# scripts/launcher/run.bash: `cudapool run` (sourced by scripts/cudapool, which defines say,
# installed_file, shim_library, sanitizer_runtime and tool): its options, --conf-from (cudapool
# tune's recommendation as CUDAPOOL_CONF), the checks made before COMMAND starts (COMMAND found and
# executable; what the shim would say of the settings and the log template), and, when a log was
# asked for, the check after COMMAND ends that a log came from the run. Not here: the shim, the
# tune, the settings' and the template's rules (cudapool-config --launch-check and --log-files: the
# shim's own code, answered in key=value lines).
# shellcheck shell=bash disable=SC2154  # installed, prefix, root, lib: scripts/cudapool sets them

say_run() { printf 'cudapool run: %s\n' "$*" >&2; }

# check_command NAME: exits 127 (not found) or 126 (not executable) as a shell would, said.
check_command() {
  local c=$1
  if [[ "$c" == */* ]]; then
    if [ -d "$c" ]; then say_run "$c: is a directory"; exit 126; fi
    if [ ! -e "$c" ]; then say_run "$c: command not found"; exit 127; fi
    if [ ! -x "$c" ]; then say_run "$c: not executable"; exit 126; fi
  elif [ -z "$(type -P -- "$c")" ]; then
    say_run "$c: command not found"
    exit 127
  fi
}

# conf_from LOG...: sets conf (and conf_set) to what cudapool tune recommends for the logs and
# says which setting and why; exits 1 when they cannot be tuned.
conf_from() {
  local tune json="" rc=0 answer
  if [ "$installed" -eq 1 ]; then tune=$(installed_tool cudapool-tune)
  else tune=$(tool cudapool-tune); fi
  command -v python3 >/dev/null 2>&1 || { say_run "--conf-from needs python3 (apt-get install -y python3)"; exit 1; }
  json=$("$tune" --json --quiet "$@") || rc=$?
  if [ "$rc" -ne 0 ]; then
    say_run "--conf-from: cudapool tune $* failed (exit $rc, above): COMMAND not started"
    exit 1
  fi
  # line 1: keep or change; line 2: the conf string; line 3: why
  answer=$(printf '%s' "$json" | python3 -c '
import json, sys
r = json.load(sys.stdin).get("recommendation")
if not r:
    sys.exit(1)
print("keep" if r["keep_own"] else "change")
print(r["cudapool_conf"].replace("\n", " "))
print(r["why"].replace("\n", " "))') || { say_run "--conf-from: cudapool tune $* recommended nothing: COMMAND not started"; exit 1; }
  local what setting why
  { read -r what; read -r setting; read -r why; } <<<"$answer"
  conf=$setting conf_set=1
  if [ "$what" = change ]; then
    say_run "CUDAPOOL_CONF=$setting from cudapool tune $*: $why"
  elif [ -n "$setting" ]; then
    say_run "CUDAPOOL_CONF=$setting (the log's own settings, kept) from cudapool tune $*: $why"
  else
    say_run "the defaults (CUDAPOOL_CONF empty) from cudapool tune $*, which recommends keeping the log's own settings, the defaults: $why"
  fi
}

# run_checks: what the shim would say at its first CUDA call, said before COMMAND starts (a program
# that never touches CUDA would hear nothing), as the shim says it: cudapool-config --launch-check
# (the shim's own reading of the environment, in key=value lines; its stderr, the shim's words: the
# conf string's diagnostics, a bad CUDAPOOL_LOG, nothing created), then strict:True refusing
# (return 1: exit 1, COMMAND not run). Sets config_tool (cudapool-config, "" when there is none) and
# log_problem=1 when the shim would open no log. Nothing when the shim is disabled;
# CUDAPOOL_LOG_LEVEL=error keeps only the refusal, off says nothing.
config_tool="" log_problem=0
run_checks() {
  case "${CUDAPOOL_DISABLE:-}" in "" | 0 | false | False) ;; *) return 0 ;; esac
  # The checks' own commands run with the LD_PRELOAD the caller had: COMMAND alone gets the shim's.
  local level=${CUDAPOOL_LOG_LEVEL:-warn} answer rc=0 key value refuse=0 from=""
  case "$level" in off | error) ;; *) level=warn ;; esac
  if [ "$installed" -eq 1 ]; then config_tool="$prefix/bin/cudapool-config"
  else config_tool=$(tool cudapool-config 2>/dev/null) || config_tool=""; fi
  [ -x "$config_tool" ] || { config_tool=""; return 0; }
  # %p for this pid (exec keeps it; a child's differs only in its digits).
  if [ "$level" = warn ]; then answer=$("$config_tool" --launch-check --pid $$) || rc=$?
  else answer=$("$config_tool" --launch-check --pid $$ 2>/dev/null) || rc=$?; fi
  [ "$rc" -le 1 ] || return 0  # (2: a usage error, said; no answer to read)
  while IFS='=' read -r key value; do
    case "$key" in
      refuse) refuse=$value ;;
      conf_from) from=$value ;;
      log_ok) [ "$value" = 1 ] || log_problem=1 ;;
    esac
  done <<<"$answer"
  if [ "$refuse" = 1 ]; then
    [ "$level" = off ] ||
      say "strict:True and the settings in ${from:-the environment} have errors: refusing to start"
    return 1
  fi
  return 0
}

# log_files: the files that CUDAPOOL_LOG can name for any pid, rank and host, one a line (file=NAME,
# or stream=NAME for a device or FIFO written as it is; names escaped to one line): cudapool-config
# --log-files, the shim's template and file-naming rules (NAME.1 ..., the uncompressed name).
log_files() { "$config_tool" --log-files "$CUDAPOOL_LOG" 2>/dev/null || true; }

# logged BEFORE: true when a file the template names is not in BEFORE (the list from before
# COMMAND started), or is a FIFO or device (written as it is: whether it was cannot be told).
logged() {
  local line
  while IFS= read -r line; do
    case "$line" in
      stream=*) return 0 ;;
      file=*) grep -qxF -- "$line" <<<"$1" || return 0 ;;
    esac
  done < <(log_files)
  return 1
}

# run_child COMMAND...: COMMAND as run's child (the terminal's ^C reaches it, TERM and HUP sent to
# run are passed on), then the log check; exits with COMMAND's status.
run_child() {
  local before="" child rc=0
  [ -z "$config_tool" ] || before=$(log_files)
  # A non-interactive shell starts a background command with SIGINT and SIGQUIT ignored: env
  # gives them back (coreutils 8.31+; without it COMMAND runs in the foreground, TERM not passed).
  if env --default-signal=INT true 2>/dev/null; then
    env --default-signal=INT,QUIT -- LD_PRELOAD="$shim_preload" "$@" <&0 &
    child=$!
    trap 'kill -TERM "$child" 2>/dev/null' TERM
    trap 'kill -HUP "$child" 2>/dev/null' HUP
    trap '' INT QUIT
    while :; do
      rc=0
      wait "$child" 2>/dev/null || rc=$?
      # interrupted by a signal run passed on: wait again
      if [ "$rc" -gt 128 ] && kill -0 "$child" 2>/dev/null; then continue; fi
      break
    done
    trap - TERM HUP INT QUIT
  else
    LD_PRELOAD=$shim_preload "$@" || rc=$?
  fi
  # (without cudapool-config, which names the files, nothing is said)
  if [ -n "$config_tool" ] && [ "$log_problem" -eq 0 ] &&
     [ "${CUDAPOOL_LOG_LEVEL:-warn}" != off ] && [ "${CUDAPOOL_LOG_LEVEL:-warn}" != error ] &&
     ! logged "$before"; then
    say_run "$1 made no CUDA call under the shim: nothing was logged (CUDAPOOL_LOG=$CUDAPOOL_LOG)"
  fi
  exit "$rc"
}

run_command() {
  local conf="" log="" summary="" conf_set=0 log_set=0 summary_set=0 disable=0 conf_logs=()
  while [ $# -gt 0 ]; do
    case "$1" in
      -h | --help) command_help run; exit 0 ;;
      --version) version_line; exit 0 ;;
      --conf | --conf-from | --log | --summary)
        [ $# -ge 2 ] || usage_error run "$1 needs a value" ;;&
      --conf) conf=$2; conf_set=1; shift 2 ;;
      --conf-from) conf_logs+=("$2"); shift 2 ;;
      --log) log=$2; log_set=1; shift 2 ;;
      --summary) summary=$2; summary_set=1; shift 2 ;;
      --disable) disable=1; shift ;;
      --) shift; break ;;
      -*) usage_error run "unknown option $1" ;;
      *) break ;;
    esac
  done
  [ $# -gt 0 ] || usage_error run "no COMMAND given"
  [ "$conf_set" -eq 0 ] || [ "${#conf_logs[@]}" -eq 0 ] ||
    usage_error run "--conf and --conf-from go one at a time"
  check_command "$1"
  [ "${#conf_logs[@]}" -eq 0 ] || conf_from "${conf_logs[@]}"
  if [ "$installed" -eq 1 ]; then
    lib=$(installed_file "$prefix/lib/libcudapool.so" libcudapool.so \
      "it was built without the shim (no cuda.h, or CUDAPOOL_BUILD_SHIM=OFF)")
  else
    lib=$(shim_library)
  fi
  local runtime
  runtime=$(sanitizer_runtime "$lib")
  # COMMAND's LD_PRELOAD: given to COMMAND alone, so that the launcher's own commands around a
  # child COMMAND (run_child's file lists) run without the shim (or a sanitizer's runtime).
  shim_preload="${runtime:+$runtime:}$lib${LD_PRELOAD:+:$LD_PRELOAD}"
  [ "$conf_set" -eq 1 ] && export CUDAPOOL_CONF="$conf"
  [ "$log_set" -eq 1 ] && export CUDAPOOL_LOG="$log"
  [ "$summary_set" -eq 1 ] && export CUDAPOOL_SUMMARY="$summary"
  [ "$disable" -eq 1 ] && export CUDAPOOL_DISABLE=1
  run_checks || exit 1
  # With a log (and the shim on) COMMAND runs as run's child, for the note when nothing was logged.
  case "${CUDAPOOL_DISABLE:-}" in
    "" | 0 | false | False) [ -z "${CUDAPOOL_LOG:-}" ] || run_child "$@" ;;
  esac
  export LD_PRELOAD=$shim_preload
  exec "$@"
}
