// SPDX-License-Identifier: Apache-2.0
// shim/support/diagnostics.cpp: see diagnostics.h.
#include "shim/support/diagnostics.h"

#include "shim/support/environment.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#define SPDLOG_HEADER_ONLY
#define SPDLOG_FMT_EXTERNAL
#define FMT_HEADER_ONLY
#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

namespace cudapool::shim {

namespace {

constexpr const char* kLevelNames[] = {"trace", "debug", "info", "warn", "error", "off"};

// CUDAPOOL_LOG_LEVEL, read once; an unknown value: a warning and the default.
struct Choice {
  Level level = Level::kWarn;
  const char* bad = nullptr;
};

Choice read_level() {
  Choice c;
  const char* v = env_raw(Env::kLogLevel);
  if (v == nullptr || *v == '\0') return c;
  for (int i = 0; i <= static_cast<int>(Level::kOff); ++i) {
    if (std::strcmp(v, kLevelNames[i]) == 0) {
      c.level = static_cast<Level>(i);
      return c;
    }
  }
  c.bad = v;
  return c;
}

// Made at the first message actually shown, not before: a process whose shim says nothing never
// builds it. The level is applied by shown(), so the logger itself passes everything.
spdlog::logger& logger() {
  // Never destroyed: messages may come from other libraries' destructors at exit.
  static spdlog::logger* const instance = [] {
    auto* l = new spdlog::logger("cudapool", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    l->set_pattern("cudapool: %v");
    l->set_level(spdlog::level::trace);
    l->flush_on(spdlog::level::trace);
    return l;
  }();
  return *instance;
}

// CUDAPOOL_LOG_LEVEL, read at the first question; an unknown value is named then, once.
Level chosen_level() {
  static const Level level = [] {
    const Choice c = read_level();
    if (c.bad != nullptr) {
      logger().warn(
          "CUDAPOOL_LOG_LEVEL={}: accepted: off, error, warn, info, debug, trace; "
          "keeping warn",
          c.bad);
    }
    return c.level;
  }();
  return level;
}

void emit(Level level, std::string_view text) {
  constexpr std::string_view prefix = "cudapool: ";
  const auto lvl = static_cast<spdlog::level::level_enum>(static_cast<int>(level));
  while (!text.empty()) {  // one record per line, each with the prefix
    const std::size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (line.substr(0, prefix.size()) == prefix) line.remove_prefix(prefix.size());
    logger().log(lvl, "{}", line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

void vsay(Level level, const char* format, va_list args) {
  if (!shown(level)) return;
  char buf[1024];
  const int n = std::vsnprintf(buf, sizeof buf, format, args);
  if (n < 0) return;
  emit(level,
       std::string_view(buf, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof buf - 1)));
}

}  // namespace

bool shown(Level level) {
  return level != Level::kOff && static_cast<int>(level) >= static_cast<int>(chosen_level());
}

void say(Level level, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsay(level, format, args);
  va_end(args);
}

void say_text(Level level, std::string_view text) {
  if (shown(level)) emit(level, text);
}

void warn(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsay(Level::kWarn, format, args);
  va_end(args);
}

}  // namespace cudapool::shim
