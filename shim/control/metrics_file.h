// shim/control/metrics_file.h: CUDAPOOL_METRICS, the statistics as a Prometheus textfile for
// node_exporter's textfile collector (--collector.textfile.directory): the file is rewritten
// every CUDAPOOL_METRICS_INTERVAL seconds (default 5) by the control thread, atomically: written
// whole as PATH.tmp.PID (created anew, never through a link), then renamed over PATH, so a reader
// sees the old file or the new one, never a part. Removed at exit. The path is a template like
// CUDAPOOL_LOG's (%p pid, %r rank, %h host, %%). Not here: the text (prometheus_text.h), when it
// is written (control.cpp's loop).
#pragma once

#include <string>

namespace cudapool::shim {

// The path CUDAPOOL_METRICS's template names; "" with *why when the template is bad.
std::string metrics_path(const std::string& path_template, std::string* why);

// Writes the current statistics to path; false with *why (one line) when it could not.
bool write_metrics_file(const std::string& path, std::string* why);

// At exit: removes the file (and a temporary file a failed write left).
void remove_metrics_file(const std::string& path);

}  // namespace cudapool::shim
