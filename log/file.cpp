// log/file.cpp: see file.h.
#include "log/file.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cerrno>

namespace cudapool::log {

namespace {

constexpr int kMaxSuffix = 99;

std::string error_text(int err) {
  char buf[128];
  return strerror_r(err, buf, sizeof buf);  // the GNU form: returns the message
}

}  // namespace

CreatedFile create_log_file(const std::string& path) {
  CreatedFile out;
  if (path.empty()) {
    out.error = "empty log path";
    return out;
  }
  for (int suffix = 0; suffix <= kMaxSuffix; ++suffix) {
    const std::string name = suffix == 0 ? path : path + "." + std::to_string(suffix);
    int fd;
    do {
      fd = open(name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    } while (fd < 0 && errno == EINTR);
    if (fd >= 0) {
      out.fd = fd;
      out.path = name;
      if (suffix > 0) out.note = "log " + path + " exists: writing to " + name + " instead";
      return out;
    }
    const int err = errno;
    if (err != EEXIST) {
      out.error = "log " + name + ": cannot create (" + error_text(err) + ")";
      return out;
    }
  }
  out.error = "log " + path + ": " + path + " and " + path + ".1 to " + path + "." +
              std::to_string(kMaxSuffix) + " all exist";
  return out;
}

}  // namespace cudapool::log
