// log/file.h: creates the log file safely: open(2) with
// O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC and mode 0600 (less what the umask removes), so that
// an existing file is never overwritten or appended to and a symbolic link at the name is never
// followed. When the name is taken (by a file, a directory or a link, dangling or not) it tries
// NAME.1, NAME.2, ... NAME.99. Symbolic links in the directory part of the path are followed as
// usual. Prints nothing: the caller warns.
#pragma once

#include <string>

namespace cudapool::log {

struct CreatedFile {
  int fd = -1;        // open for writing, or -1
  std::string path;   // the name created (NAME or NAME.k)
  std::string error;  // when fd is -1: why, naming the path
  std::string note;   // when NAME.k was used: one line saying so
};

CreatedFile create_log_file(const std::string& path);

}  // namespace cudapool::log
