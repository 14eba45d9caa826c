// SPDX-License-Identifier: Apache-2.0
// log/whole_file.cpp: see whole_file.h.
#include "log/whole_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "log/descriptor.h"
#include "log/file.h"

namespace cudapool::log {

std::string write_whole_file(const std::string& path, std::string_view data) {
  if (path.empty() || path.back() == '/') return path + ": names a directory; nothing written";
  if (in_dev(path)) return path + ": nothing is created in /dev";
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return path + ": exists and is not a regular file; left as it is, nothing written";
  }
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  int fd;
  do {
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return temporary + ": cannot create (" + failure_text(errno) + ")";
  int err = write_all(fd, data);
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL && errno != EROFS) err = errno;
  if (::close(fd) != 0 && err == 0 && errno != EINTR) err = errno;
  if (err == 0 && ::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_err = errno;
    ::unlink(temporary.c_str());
    return path + ": cannot put the file there (" + failure_text(rename_err) + ")";
  }
  if (err != 0) {
    ::unlink(temporary.c_str());
    return temporary + ": cannot write (" + failure_text(err) + ")";
  }
  return "";
}

}  // namespace cudapool::log
