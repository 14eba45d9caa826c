// SPDX-License-Identifier: Apache-2.0
// log/whole_file.h: a file written whole or not at all, once: the memory_viz snapshot the shim
// writes at an out-of-memory (CUDAPOOL_OOM_SNAPSHOT). The content goes to PATH.tmp.PID (created
// anew in PATH's directory: O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600 less the umask), is flushed to
// the disk, and only then renamed to PATH, so PATH is the old file or the whole new one, never a
// part; on any failure the temporary is removed. An existing regular file at PATH is replaced
// (the newest snapshot wins, as an export's OUT); anything else there (a directory, a symbolic
// link, a FIFO, a device, a socket) is left as it is and nothing is written; nothing is created in
// /dev (file.h's in_dev). Writes through write_all (descriptor.h: no SIGXFSZ, no SIGPIPE). Prints
// nothing: the caller warns. Not here: a file rewritten again and again (rewritten_file.h), the
// log's files (file.h).
#pragma once

#include <string>
#include <string_view>

namespace cudapool::log {

// "" when PATH now holds data, else why not (naming the path, for one warning).
std::string write_whole_file(const std::string& path, std::string_view data);

}  // namespace cudapool::log
