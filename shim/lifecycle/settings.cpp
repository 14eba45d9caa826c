// shim/lifecycle/settings.cpp: see settings.h.
#include "shim/lifecycle/settings.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "config/describe.h"
#include "config/environment.h"
#include "config/parse.h"
#include "shim/recording/clock.h"
#include "shim/support/diagnostics.h"

namespace cudapool::shim {

namespace detail {
constinit NeverDestroyed<Reporting> g_reporting;
}  // namespace detail

namespace {

constinit config::Options g_options;
// Never destroyed and constant-initialized, like g_reporting: read at exit for the log header.
constinit NeverDestroyed<ConfRecord> g_conf_record;

bool truthy(const char* value) {
  return value != nullptr && value[0] != '\0' && std::strcmp(value, "0") != 0 &&
         std::strcmp(value, "false") != 0 && std::strcmp(value, "False") != 0;
}

// A whole number from lo to hi in the variable name, else fallback: unset or empty silently,
// anything else with one warning ("accepted: a number of UNIT from lo to hi; keeping KEPT").
long long env_count(const char* name, long long lo, long long hi, const char* unit,
                    const char* kept, long long fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (end != v && *end == '\0' && n >= lo && n <= hi) return n;
  warn("%s=%s: accepted: a number of %s from %lld to %lld; keeping %s", name, v, unit, lo, hi,
       kept);
  return fallback;
}

void read_reporting() {
  Reporting& r = detail::g_reporting.get();
  r.start_ns = monotonic_ns();
  if (const char* v = std::getenv("CUDAPOOL_LOG"); v != nullptr) r.log_template = v;
  if (const char* v = std::getenv("CUDAPOOL_SUMMARY"); v != nullptr) r.summary_target = v;
  r.backtrace_frames = static_cast<int>(env_count("CUDAPOOL_BACKTRACE", 0, 16, "frames", "0", 0));
  r.trace_lookups = truthy(std::getenv("CUDAPOOL_TRACE_LOOKUPS"));
  r.log_buffer = static_cast<std::size_t>(
      env_count("CUDAPOOL_LOG_BUFFER", 256, 1ll << 24, "events", "the default", 0));
}

}  // namespace

const ConfRecord& conf_record() {
  return g_conf_record.get();
}

const config::Options& options() {
  return g_options;
}

bool disabled_by_environment() {
  return truthy(std::getenv("CUDAPOOL_DISABLE"));
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
