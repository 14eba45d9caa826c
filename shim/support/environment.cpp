// shim/support/environment.cpp: see environment.h.
#include "shim/support/environment.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace cudapool::shim {

static_assert(sizeof kEnvironment / sizeof kEnvironment[0] ==
                  static_cast<int>(Env::kTestCompressionLibrary) + 1,
              "one table row per Env, in order");

const char* env_raw(Env e) {
  return std::getenv(env_var(e).name);
}

const char* env_text(Env e) {
  const char* v = env_raw(e);
  return v != nullptr ? v : "";
}

bool env_flag(Env e) {
  const char* v = env_raw(e);
  return v != nullptr && v[0] != '\0' && std::strcmp(v, "0") != 0 && std::strcmp(v, "false") != 0 &&
         std::strcmp(v, "False") != 0;
}

long long env_count(Env e, long long fallback, bool* bad) {
  const EnvVar& var = env_var(e);
  const char* v = env_raw(e);
  *bad = false;
  if (v == nullptr || v[0] == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (end != v && *end == '\0' && n >= var.lo && n <= var.hi) return n;
  *bad = true;
  return fallback;
}

void count_warning(Env e, char* buf, unsigned long size) {
  const EnvVar& var = env_var(e);
  std::snprintf(buf, size, "%s=%s: accepted: a number of %s from %lld to %lld; keeping %s",
                var.name, env_text(e), var.unit, var.lo, var.hi, var.kept);
}

}  // namespace cudapool::shim
