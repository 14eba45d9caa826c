// SPDX-License-Identifier: Apache-2.0
// shim/control/prometheus_text.h: the running process's statistics in the Prometheus text
// exposition format (version 0.0.4: # HELP and # TYPE lines, then one sample a line), for
// `cudapool stats PID --prometheus` and the CUDAPOOL_METRICS file (node_exporter's textfile
// collector). The statistics' names come from pool/stats.def, each with its meaning as HELP:
//   ARRAY m   cudapool_m (gauge: .current), cudapool_m_peak (gauge), cudapool_m_allocated_total
//             and cudapool_m_freed_total (counters), labelled pool="all"|"small"|"large"
//   SINGLE m  the same four without the pool label
//   COUNTER m cudapool_m_total (a counter) when its combine is sum; cudapool_m (a gauge) otherwise
// every sample labelled pid="P",device="D"; and the process's own figures (fenced, idle, threads'
// caches, the read's time). docs/control.md lists them. Formatting only: the numbers come from
// reports/pool_readings.h. Not here: the file (metrics_file.h), the socket (control_socket.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shim/reports/pool_readings.h"

namespace cudapool::shim {

struct ProcessFigures {
  std::uint64_t pid = 0;
  double start_unix_s = 0;  // when the shim started, on the wall clock
  double read_unix_s = 0;   // when the devices were read
  int captures_in_progress = 0;
};

// The process's figures now (its pid, the clocks, the captures in progress).
ProcessFigures process_figures_now();

std::string prometheus_text(const std::vector<DeviceReading>& devices, const ProcessFigures& p);

}  // namespace cudapool::shim
