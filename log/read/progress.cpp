// SPDX-License-Identifier: Apache-2.0
// log/read/progress.cpp: see progress.h.
#include "log/read/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>

#include "config/terminal_text.h"

namespace cudapool::log {

namespace {

constexpr auto kRedraw = std::chrono::milliseconds(200);

std::string format(const char* fmt, double value, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value, unit);
  return buf;
}

// 1023 B, 1.0 KiB, 312.5 MiB, 84.5 GiB.
std::string bytes_text(std::uint64_t n) {
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (n < 1024) return std::to_string(n) + " B";
  double v = static_cast<double>(n) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return format("%.1f %s", v, kUnits[u]);
}

// 999, 12.3 k, 1.73 M, 4.20 G.
std::string count_text(double n) {
  if (n < 1000) return std::to_string(static_cast<std::uint64_t>(n));
  if (n < 1e6) return format("%.1f %s", n / 1e3, "k");
  if (n < 1e9) return format("%.2f %s", n / 1e6, "M");
  return format("%.2f %s", n / 1e9, "G");
}

// 0:42, 12:05, 1:02:09.
std::string duration_text(double seconds) {
  const auto s = static_cast<std::uint64_t>(seconds + 0.5);
  char buf[48];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%llu:%02llu:%02llu", static_cast<unsigned long long>(s / 3600),
                  static_cast<unsigned long long>(s / 60 % 60),
                  static_cast<unsigned long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof buf, "%llu:%02llu", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
  }
  return buf;
}

std::size_t terminal_width() {
  winsize ws{};
  if (::ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) return ws.ws_col;
  return 80;
}

}  // namespace

std::string progress_text(const ProgressFigures& f, double seconds) {
  // A name's control characters would act on the terminal: escaped as every message escapes.
  std::string text = config::escape_for_terminal(f.name) + ": ";
  const std::string decoded = f.compressed ? "; " + bytes_text(f.decoded) + " decoded" : "";
  if (f.total > 0) {
    const std::uint64_t read = f.read < f.total ? f.read : f.total;
    text += std::to_string(read * 100 / f.total) + "% (" + bytes_text(read) + " of " +
            bytes_text(f.total) + decoded + ")";
  } else {
    text += bytes_text(f.read) + (f.compressed ? " (" + decoded.substr(2) + ")" : "");
  }
  text += ", " + count_text(static_cast<double>(f.events)) + " events";
  if (seconds > 0) {
    text += ", " + count_text(static_cast<double>(f.events) / seconds) + " events/s";
    if (f.total > 0 && f.read > 0 && f.read < f.total) {
      const double left =
          seconds * static_cast<double>(f.total - f.read) / static_cast<double>(f.read);
      text += ", " + duration_text(left) + " left";
    }
  }
  return text;
}

void Progress::start(bool enabled) {
  on_ = enabled && ::isatty(2) == 1;
  drawn_ = false;
  start_ = std::chrono::steady_clock::now();
}

void Progress::update(const ProgressFigures& figures) {
  if (!on_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < kRedraw) return;
  last_ = now;
  drawn_ = true;
  std::string text = progress_text(figures, std::chrono::duration<double>(now - start_).count());
  // Cut to the width (the last column would wrap on some terminals), never inside a UTF-8
  // character: a line that wrapped could not be redrawn in place.
  text.resize(config::character_boundary(text, terminal_width() - 1));
  text = "\r" + text + "\033[K";
  // One write: the line is never left half drawn by this process.
  [[maybe_unused]] const ssize_t n = ::write(2, text.data(), text.size());
}

void Progress::clear() {
  if (drawn_) {
    static const char kClear[] = "\r\033[K";
    [[maybe_unused]] const ssize_t n = ::write(2, kClear, sizeof kClear - 1);
  }
  on_ = false;
  drawn_ = false;
}

}  // namespace cudapool::log
