// SPDX-License-Identifier: Apache-2.0
// shim/control/metrics_file.cpp: see metrics_file.h.
#include "shim/control/metrics_file.h"

#include <unistd.h>

#include <cstdlib>

#include "log/path_template.h"
#include "shim/control/prometheus_text.h"
#include "shim/reports/pool_readings.h"

namespace cudapool::shim {

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

log::RewrittenFile::Outcome write_metrics_file(log::RewrittenFile& file, std::string* why) {
  return file.write(prometheus_text(read_devices(), process_figures_now()), why);
}

}  // namespace cudapool::shim
