// SPDX-License-Identifier: Apache-2.0
// log/file.h: opens the destination of the log (CUDAPOOL_LOG) or of the exit summary
// (CUDAPOOL_SUMMARY), both the same way:
// - A name that is a directory (ends in '/', is '.' or '..', or is an existing directory, through
//   a link or not) is an error.
// - An existing character device or FIFO is written as it is (/dev/null, /dev/full, a named pipe
//   of root's or this user's; through a symbolic link that root or this user owns, /dev/stderr;
//   a FIFO or link of anyone else's is a taken name): opened O_WRONLY|O_NOCTTY|O_CLOEXEC, never
//   O_CREAT, never numbered. A FIFO without a reader is an error, not a wait (opened O_NONBLOCK,
//   then made blocking again).
// - Otherwise a new regular file, mode 0600 (less the umask), whose first content (the log's
//   header line, the whole summary) is in it before its name appears: made unnamed in the
//   directory (O_TMPFILE), written, then linked in with linkat(2), which never replaces an
//   existing name and never follows a link there. When the name is taken (a file, a directory, a
//   link, dangling or not) it tries NAME.1, NAME.2, ... NAME.99, with a note. Where the file
//   system has no O_TMPFILE (or /proc is not mounted): open(O_CREAT|O_EXCL|O_NOFOLLOW), then the
//   content at once (a kill between those two calls can leave an empty file there only).
// - Nothing is ever created in /dev (the directory resolved; /dev/shm excepted).
// The first content is written by write_all (descriptor.h): no signal, and a FIFO whose reader
// does not read makes it an error after kStallMs, not a wait.
// Symbolic links in the directory part of the path are followed as usual. Prints nothing: the
// caller warns. Not here: the path template (path_template.h), what is written later (logger.h),
// the descriptor afterwards (descriptor.h).
#pragma once

#include <string>
#include <string_view>

#include "log/descriptor.h"  // NoWriteSignals, write_all: how the first content is written

namespace cudapool::log {

// The last of the numbered names create_log_file tries when NAME is taken: NAME.1 ... NAME.99.
constexpr int kMaxSuffix = 99;

// What the file is, for the messages: "log PATH: ...", "summary PATH: ...".
enum class FileKind { kLog, kSummary };

struct CreatedFile {
  int fd = -1;           // open for writing, or -1
  std::string path;      // the name written (NAME or NAME.k)
  std::string error;     // when fd is -1: why, naming the path
  std::string note;      // when NAME.k was used: one line saying so
  bool created = false;  // a new regular file (false: an existing device or FIFO)
};

// first: written before the call returns (and, for a new file, before its name appears): a short
// write is an error ("cannot write the header" / "the summary") and leaves no file behind.
CreatedFile create_log_file(const std::string& path, std::string_view first = {},
                            FileKind kind = FileKind::kLog);

// Whether create_log_file would write path as it is: an existing character device or FIFO (found
// with lstat/stat only, nothing opened).
bool names_stream(const std::string& path);

// Whether the path's directory, resolved, is /dev or lies below it (/dev/shm, a tmpfs for files,
// excepted): nothing is created there (also log/rewritten_file.h's rule).
bool in_dev(const std::string& path);

// What create_log_file would say about path, found without creating or opening anything (a FIFO
// is not opened: its reader would see the open): "" when it would write there, else its error.
// For `cudapool run`'s check before the program starts (cudapool-config --log-template).
std::string check_log_file(const std::string& path, FileKind kind = FileKind::kLog);

}  // namespace cudapool::log
