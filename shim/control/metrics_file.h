// SPDX-License-Identifier: Apache-2.0
// shim/control/metrics_file.h: CUDAPOOL_METRICS, the statistics as a Prometheus textfile for
// node_exporter's textfile collector (--collector.textfile.directory), rewritten every
// CUDAPOOL_METRICS_INTERVAL seconds (default 5) by the control thread. The path is a template
// like CUDAPOOL_LOG's (%p pid, %r rank, %h host, %%). The file's rules (a new file, written whole
// then put at the name, never over a file this process did not make, nothing in /dev, removed
// only while it is still this process's) are log/rewritten_file.h's. Not here: the text
// (prometheus_text.h), when it is written and removed (control.cpp).
#pragma once

#include <string>

#include "log/rewritten_file.h"

namespace cudapool::shim {

// The path CUDAPOOL_METRICS's template names; "" with *why when the template is bad.
std::string metrics_path(const std::string& path_template, std::string* why);

// Writes the current statistics to the file (*why: one line, when it failed or stopped).
log::RewrittenFile::Outcome write_metrics_file(log::RewrittenFile& file, std::string* why);

}  // namespace cudapool::shim
