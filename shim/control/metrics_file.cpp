// shim/control/metrics_file.cpp: see metrics_file.h.
#include "shim/control/metrics_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "log/path_template.h"
#include "shim/control/pool_readings.h"
#include "shim/control/prometheus_text.h"

namespace cudapool::shim {

namespace {

std::string temporary_path(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

std::string metrics_path(const std::string& path_template, std::string* why) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  const log::ExpandedPath expanded = log::expand_path_template(
      path_template, [](const char* name) { return std::getenv(name); },
      static_cast<std::uint64_t>(::getpid()), host);
  if (!expanded.ok()) {
    *why = "CUDAPOOL_METRICS: " + expanded.error;
    return "";
  }
  return expanded.path;
}

bool write_metrics_file(const std::string& path, std::string* why) {
  const std::string text = prometheus_text(read_devices(), process_figures_now());
  const std::string tmp = temporary_path(path);
  ::unlink(tmp.c_str());  // a link or file of an earlier write: the name itself goes
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    *why = tmp + ": cannot create (" + std::strerror(errno) + ")";
    return false;
  }
  const bool written = write_all(fd, text);
  const int write_errno = errno;
  if (::close(fd) != 0 || !written) {
    *why = tmp + ": cannot write (" + std::strerror(written ? errno : write_errno) + ")";
    ::unlink(tmp.c_str());
    return false;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    *why = path + ": cannot rename " + tmp + " over it (" + std::strerror(errno) + ")";
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

void remove_metrics_file(const std::string& path) {
  ::unlink(temporary_path(path).c_str());
  ::unlink(path.c_str());
}

}  // namespace cudapool::shim
