// SPDX-License-Identifier: Apache-2.0
// log/read/progress.h: the progress line of a tool reading a log (docs/log-format.md, "Progress"):
// on stderr, only when stderr is a terminal and the tool was not given --quiet, one line redrawn
// in place at most five times a second and cut to the terminal's width, with the bytes read of
// the input (and decoded, for a compressed one), the events (lines) read, events per second and,
// when the input's size is known (a regular file), how far along and the time left; cleared when
// the reading ends. The Python side draws the same line (scripts/cudapool_analysis/progress.py,
// the same progress_text()). Not here: counting what is read (input.h does, as it reads).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace cudapool::log {

struct ProgressFigures {
  std::string name;           // the input, as messages name it
  std::uint64_t read = 0;     // bytes of the input read
  std::uint64_t total = 0;    // the input's size in bytes; 0 when unknown
  std::uint64_t decoded = 0;  // plain bytes decoded from it (a compressed input)
  bool compressed = false;    // show decoded
  std::uint64_t events = 0;   // lines read
};

// The line for these figures after seconds of reading, e.g. "run.jsonl.zst: 37% (31.2 MiB of
// 84.5 MiB; 312.5 MiB decoded), 1.73 M events, 2.05 M events/s, 0:42 left".
std::string progress_text(const ProgressFigures& figures, double seconds);

class Progress {
 public:
  Progress() = default;
  ~Progress() { clear(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Starts the line for one input when enabled and stderr (descriptor 2) is a terminal.
  void start(bool enabled);
  bool on() const { return on_; }
  // Redraws the line when 200 ms or more passed since the last time (the first update draws).
  void update(const ProgressFigures& figures);
  // Removes the line, if one is drawn; the next update() does not draw again.
  void clear();

 private:
  bool on_ = false;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_{};
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace cudapool::log
