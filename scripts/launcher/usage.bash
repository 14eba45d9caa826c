# SPDX-License-Identifier: Apache-2.0
# scripts/launcher/usage.bash: what the launcher (scripts/cudapool, sourced by it) says about
# itself: the list of commands (cudapool help), the --help text and the one-line usage of the
# commands it carries out itself (demo, run, setup, build, test, help), its version, and the
# usage error. Not here: the usage of config, replay and tune (the C++ tools print their own) or of
# report, export, stats, empty-cache, snapshot and top (the Python package prints its own).
# shellcheck shell=bash disable=SC2154  # installed, prefix, root, lib: scripts/cudapool sets them

# The project's version, "cudapool 0.1.0": the Python package's (version.py, checked against
# CMakeLists.txt's project(VERSION) by tests/cli/commands_walk.sh), in the checkout or the install.
version_line() {
  local file
  if [ "$installed" -eq 1 ]; then file="$prefix/share/cudapool/cudapool_analysis/version.py"
  else file="$root/scripts/cudapool_analysis/version.py"; fi
  printf 'cudapool %s\n' "$(sed -n 's/^VERSION = "\(.*\)"$/\1/p' "$file" 2>/dev/null)"
}

# usage_line COMMAND: its one-line usage; "" for the launcher itself.
usage_line() {
  case "$1" in
    "") echo "usage: cudapool COMMAND [ARGUMENTS...] (cudapool help: the commands)" ;;
    demo) echo "usage: cudapool demo" ;;
    run) echo "usage: cudapool run [--conf STRING | --conf-from LOG] [--log PATH] [--summary TARGET] [--disable] [--] COMMAND [ARGS...]" ;;
    setup) echo "usage: cudapool setup" ;;
    build) echo "usage: cudapool build [--sanitize asan|tsan]" ;;
    test) echo "usage: cudapool test [--sanitize asan|tsan] [CTEST ARGUMENTS...]" ;;
    help) echo "usage: cudapool help [COMMAND]" ;;
  esac
}

# usage_error COMMAND WHAT: "cudapool COMMAND: WHAT" and its usage line on stderr; exit 2.
usage_error() {
  printf 'cudapool%s: %s\n' "${1:+ $1}" "$2" >&2
  usage_line "$1" >&2
  exit 2
}

# standard_options COMMAND ARGS...: --help / -h (COMMAND's help) and --version answered, exit 0.
standard_options() {
  local command=$1
  shift
  for arg in "$@"; do
    case "$arg" in
      -h | --help) command_help "$command"; exit 0 ;;
      --version) version_line; exit 0 ;;
    esac
  done
}

# command_help COMMAND: the --help of a command the launcher carries out itself.
command_help() {
  usage_line "$1"
  case "$1" in
    demo) cat <<'TEXT'
  Replays the bundled allocation log (a synthetic training loop: 40 steps, growing batch)
  through the pool on a simulated device and prints its memory summary (in a source checkout it
  builds first, installing what is missing).
TEXT
      ;;
    run) cat <<'TEXT'
  Runs COMMAND with libcudapool.so preloaded (existing LD_PRELOAD entries are kept) and returns
  its exit status. Options (before COMMAND; -- ends them):
  --conf STRING      the pool settings: CUDAPOOL_CONF (cudapool config STRING shows them)
  --conf-from LOG    the setting cudapool tune recommends for LOG (a log of an earlier run): runs
                     cudapool tune --json LOG first and says on stderr which setting and why;
                     when tune recommends keeping the log's settings, those (the defaults when
                     the log had none). A LOG that cannot be tuned: exit 1, COMMAND not started.
                     Repeatable (the ranks of one job: the setting best for the worst). Not with
                     --conf
  --log PATH         CUDAPOOL_LOG: the allocation log, a path template (%p pid, %r rank, %h host,
                     %% a percent sign; a name ending in .zst or .gz is compressed)
  --summary TARGET   CUDAPOOL_SUMMARY: stderr, stdout or a path: the memory summary and leaks at
                     exit
  --disable          CUDAPOOL_DISABLE=1: the shim passes every call through
  --help, --version  this text; the version
  Before COMMAND starts, the conf string and the log template are checked and their problems
  printed (the shim itself only speaks at the first CUDA call); with strict:True and errors
  COMMAND is not started, exit 1. A COMMAND that cannot be found: exit 127; found but not
  executable: 126 (as shells do). With a log asked for (--log or CUDAPOOL_LOG), run waits for
  COMMAND (its child: COMMAND's pid is not run's) and, when no log file came from the run, says
  so: COMMAND made no CUDA call under the shim; the exit status stays COMMAND's. Otherwise run
  becomes COMMAND (exec: the same pid).
TEXT
      ;;
    setup) if [ "$installed" -eq 1 ]; then cat <<'TEXT'
  An installed copy carries everything it needs: setup only checks for python3 (report, export).
TEXT
      else cat <<'TEXT'
  Installs what is missing: apt packages as root (clang for tests/fuzz included; otherwise prints
  the apt-get line to run), and web/'s npm packages (the HTML report's charting library).
TEXT
      fi ;;
    build) cat <<'TEXT'
  Configures and builds everything (tools and tests) in CUDAPOOL_BUILD_DIR (default: build/).
  --sanitize asan|tsan: everything, the shim included, with AddressSanitizer and UBSan (asan) or
  ThreadSanitizer (tsan), in a build directory of its own (BUILD-asan, BUILD-tsan). Needs a
  source checkout.
TEXT
      ;;
    test) cat <<'TEXT'
  Builds, then runs every CPU test (ctest; CTEST ARGUMENTS go to ctest, e.g. -R NAME).
  --sanitize asan|tsan: in the sanitizer build (see cudapool build --help); any sanitizer report
  fails the run. Needs a source checkout.
TEXT
      ;;
    help) cat <<'TEXT'
  The list of commands; with COMMAND, that command's --help.
TEXT
      ;;
  esac
}

# usage: the list of commands (cudapool help, cudapool --help).
usage() {
  cat <<'USAGE'
usage: cudapool COMMAND [ARGUMENTS...]
       cudapool COMMAND --help     (every command: its usage; --version: the version)

  demo                 replay the bundled allocation log and print its summary
  run [--conf STRING | --conf-from LOG] [--log PATH] [--summary TARGET] [--disable] -- COMMAND...
                       run COMMAND with libcudapool.so preloaded and return its exit status
                       (--conf CUDAPOOL_CONF, --conf-from LOG what cudapool tune recommends for
                       LOG, --log CUDAPOOL_LOG, --summary CUDAPOOL_SUMMARY, --disable)
  config [STRING]      print the effective pool settings of STRING, or of the environment
                       (CUDAPOOL_CONF, then PYTORCH_ALLOC_CONF, then PYTORCH_CUDA_ALLOC_CONF);
                       exits 1 when the settings have errors
  replay [--conf STRING] [--device-memory SIZE] [--json] LOG
                       replay an allocation log (cudapool.log/1; - for stdin) through the pool
                       on a simulated device and print the memory summary
  tune [--device-memory SIZE] [--fraction F] [--try CONF]... [--json] LOG...
                       replay each log under a sweep of pool settings, rank them by peak
                       reserved memory and recommend a conf string
  report [--json | --html OUT [--tune]] [--level LEVEL] [--no-symbols] LOG...
                       read allocation logs: statistics, peaks, memory held over time (--level:
                       a fraction of the peak or a SIZE), fragmentation, request sizes, leaks,
                       the answer first; --html: one self-contained page (docs/report.md)
  export --memory-viz OUT [--no-symbols] LOG | --perfetto OUT LOG...
                       a log as a snapshot for pytorch.org/memory_viz, or logs as one Perfetto
                       trace (docs/exports.md)
  stats PID [--json | --prometheus]
                       ask a process running with CUDAPOOL_CONTROL=1 for its memory_summary()
                       table, settings and fenced blocks (docs/control.md)
  empty-cache PID      release that process's idle cached segments (torch.cuda.empty_cache())
  snapshot PID -o FILE write its memory_viz snapshot now
  top [--once]         every process of yours with a control socket, refreshed every second
  help [COMMAND]       this text; a command's --help

SIZE (--device-memory, --level): bytes, or a number with K, M, G or T, any case, B or iB optional
(512M, 80G, 2GB, 2gib, 1.5T): binary units, G = GiB = 2^30 bytes, as PyTorch and nvidia-smi count.
Exit status of every command: 0 done, 1 a problem (a log that cannot be read, settings with
errors), 2 a usage error (the message, then the command's usage line, on stderr); run: COMMAND's.
USAGE
  echo
  echo "Building (in a source checkout only):"
  if [ "$installed" -eq 1 ]; then
    cat <<INSTALLED
  setup, build, test   not in this copy: it is installed ($prefix) and never builds; build
                       and test need a source checkout (setup here only checks for python3).

This is an installed copy ($prefix): every command above uses its own files ($prefix/lib,
$prefix/bin, $prefix/share/cudapool); CUDAPOOL_BUILD_DIR and CUDAPOOL_BUILD_TYPE are not used.
INSTALLED
  else
    cat <<'SOURCE'
  setup                install what is missing (apt packages as root, clang for tests/fuzz
                       included; web/'s npm packages)
  build [--sanitize asan|tsan]
                       configure and build everything (tools and tests)
  test [--sanitize asan|tsan] [CTEST ARGUMENTS...]
                       build and run every CPU test (ctest); --sanitize: in a build with
                       AddressSanitizer and UBSan (asan) or ThreadSanitizer (tsan) of its own
                       (BUILD-asan, BUILD-tsan); any sanitizer report fails the run

In a source checkout the launcher is scripts/cudapool: it builds the tools when they are missing
or older than their sources. Environment: CUDAPOOL_BUILD_DIR (default: build/ in the repository;
BUILD above), CUDAPOOL_BUILD_TYPE (default: Release; RelWithDebInfo with --sanitize),
CUDAPOOL_PGO (default 1: a Release build with g++ is optimized with a profile trained once in
BUILD/pgo; 0: an ordinary build).
SOURCE
  fi
}
