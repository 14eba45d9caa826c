// SPDX-License-Identifier: Apache-2.0
// shim/support/settings.cpp: see settings.h.
#include "shim/support/settings.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "config/describe.h"
#include "config/environment.h"
#include "config/parse.h"
#include "shim/support/clock.h"
#include "shim/support/diagnostics.h"
#include "shim/support/environment.h"

namespace cudapool::shim {

namespace detail {
constinit NeverDestroyed<Reporting> g_reporting;
}  // namespace detail

namespace {

constinit config::Options g_options;
// Never destroyed and constant-initialized, like g_reporting: read at exit for the log header.
constinit NeverDestroyed<ConfRecord> g_conf_record;

// A count variable, its malformed value warned about once (and its default kept).
long long count(Env e, long long fallback) {
  bool bad = false;
  const long long n = env_count(e, fallback, &bad);
  if (bad) {
    char text[512];
    count_warning(e, text, sizeof text);
    warn("%s", text);
  }
  return n;
}

void read_reporting() {
  Reporting& r = detail::g_reporting.get();
  r.start_ns = monotonic_ns();
  r.log_template = env_text(Env::kLog);
  r.summary_target = env_text(Env::kSummary);
  bool bad_stacks = false;
  const StacksSetting stacks = env_stacks(Env::kBacktrace, &bad_stacks);
  if (bad_stacks) {
    char text[512];
    stacks_warning(Env::kBacktrace, text, sizeof text);
    warn("%s", text);
  }
  r.backtrace_frames = stacks.native;
  r.python_frames = stacks.python;
  r.trace_lookups = env_flag(Env::kTraceLookups);
  r.log_buffer = static_cast<std::size_t>(count(Env::kLogBuffer, 0));
  r.compression_library = env_text(Env::kTestCompressionLibrary);
  r.control = env_text(Env::kControl);
  r.metrics_template = env_text(Env::kMetrics);
  r.metrics_interval_s = static_cast<int>(count(Env::kMetricsInterval, 5));
  r.oom_snapshot = env_text(Env::kOomSnapshot);
  r.records = !r.log_template.empty() || !r.summary_target.empty() ||
              (!r.oom_snapshot.empty() && (r.backtrace_frames > 0 || r.python_frames > 0));
}

}  // namespace

const ConfRecord& conf_record() {
  return g_conf_record.get();
}

const config::Options& options() {
  return g_options;
}

bool disabled_by_environment() {
  return env_flag(Env::kDisable);
}

ConfErrors read_settings() {
  const config::ConfSource source =
      config::select_conf([](const char* name) { return std::getenv(name); });
  const config::ParseResult parsed = config::parse_conf(source.conf);
  ConfRecord& record = g_conf_record.get();
  record.conf = source.conf;
  record.variable = source.variable;
  record.settings = config::describe(parsed);
  for (const auto& d : parsed.diagnostics) say_text(Level::kWarn, d.message());
  g_options = parsed.options;
  read_reporting();
  if (shown(Level::kInfo)) {  // CUDAPOOL_LOG_LEVEL=info: the settings in effect, once, at start
    say(Level::kInfo, "settings from %s: %s",
        source.variable.empty() ? "the defaults" : source.variable.c_str(),
        source.conf.empty() ? "(none)" : source.conf.c_str());
    for (const config::EffectiveSetting& s : record.settings) {
      say(Level::kInfo, "  %s = %s", s.name.c_str(), s.value.c_str());
    }
  }
  return ConfErrors{!parsed.diagnostics.empty(), source.variable};
}

}  // namespace cudapool::shim
