// SPDX-License-Identifier: Apache-2.0
// tools/config/launch_check.h: the two questions `cudapool run` asks cudapool-config, answered in
// lines of key=value for a script to read, never text meant for people:
// `cudapool-config --launch-check [--pid PID]`: what the shim would make of the environment at its
// first CUDA call (the settings in force, strict:True refusing, CUDAPOOL_LOG's destination), and
// `cudapool-config --log-files TEMPLATE`: the files that exist now which a CUDAPOOL_LOG template
// can have written, for any pid, rank and host. Both from the shim's own code (config/, log/). Not
// here: showing the settings to a person (main.cpp), one template for one pid (log_template.h),
// what the launcher does with the answers (scripts/launcher/run.bash).
#pragma once

// args: what follows --launch-check. On stdout, one a line, in this order:
//   strict=0|1      strict:True is in force
//   errors=N        the conf string's diagnostics (N of them; on stderr, as the shim says them)
//   refuse=0|1      strict and errors: the shim would refuse to start (exit 1)
//   conf_from=NAME  the variable the conf came from (CUDAPOOL_CONF ...); empty when none is set
// and, when CUDAPOOL_LOG is set and not empty:
//   log=PATH        the name it expands to for PID (absent when it does not expand), escaped as
//                   config/terminal_text.h escapes: one line, a backslash as \\ (\n, \xNN ...)
//   log_ok=0|1      1: the shim would open a log there; 0: it would warn and open none
// On stderr, the shim's words in its order: the conf's diagnostics, then, unless it would refuse
// (it stops before the log), the log's warning. Returns 0 when the shim would say nothing, 1 when
// it would say something (or refuse), 2 usage error.
int launch_check_command(int argc, char** argv);

// args: what follows --log-files. On stdout, sorted, one a line, each name escaped as log= above:
//   file=NAME       a regular file the template can name (log/logger.h's log_file_globs)
//   stream=NAME     a character device or FIFO the shim would write as it is (log/file.h's
//                   names_stream): whether a run wrote to it cannot be told
// (a directory or anything else found is not listed). Returns 0; 1 when the template does not
// expand (its warning on stderr, nothing listed); 2 usage error.
int log_files_command(int argc, char** argv);
