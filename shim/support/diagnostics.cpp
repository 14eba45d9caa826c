// shim/support/diagnostics.cpp: see diagnostics.h.
#include "shim/support/diagnostics.h"

#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>

namespace cudapool::shim {

void warn(const char* format, ...) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, "cudapool: ");
  va_list args;
  va_start(args, format);
  const int m = std::vsnprintf(buf + n, sizeof buf - static_cast<std::size_t>(n) - 1, format, args);
  va_end(args);
  n = m < 0 ? n : std::min(n + m, static_cast<int>(sizeof buf) - 2);
  buf[n++] = '\n';
  ssize_t ignored = ::write(2, buf, static_cast<std::size_t>(n));
  (void)ignored;
}

}  // namespace cudapool::shim
