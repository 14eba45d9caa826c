// SPDX-License-Identifier: Apache-2.0
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

namespace {

constexpr int kDefaultNative = 8, kMaxNative = 16;
constexpr int kDefaultPython = 64, kMaxPython = 256;

// "" or ":N" with N from 1 to max; *n set (def when "").
bool depth(const char* rest, int def, int max, int* n) {
  if (*rest == '\0') {
    *n = def;
    return true;
  }
  if (*rest != ':' || rest[1] < '0' || rest[1] > '9') return false;
  char* end = nullptr;
  const long v = std::strtol(rest + 1, &end, 10);
  if (*end != '\0' || v < 1 || v > max) return false;
  *n = static_cast<int>(v);
  return true;
}

}  // namespace

StacksSetting env_stacks(Env e, bool* bad) {
  const char* v = env_raw(e);
  *bad = false;
  StacksSetting s;
  if (v == nullptr || v[0] == '\0') return s;
  int n = 0;
  if (v[0] >= '0' && v[0] <= '9') {  // N: native return addresses, as before
    char* end = nullptr;
    const long count = std::strtol(v, &end, 10);
    if (*end == '\0' && count >= 0 && count <= kMaxNative) {
      s.native = static_cast<int>(count);
      return s;
    }
  } else if (std::strncmp(v, "native", 6) == 0 && depth(v + 6, kDefaultNative, kMaxNative, &n)) {
    s.native = n;
    return s;
  } else if (std::strncmp(v, "python", 6) == 0 && depth(v + 6, kDefaultPython, kMaxPython, &n)) {
    s.python = n;
    return s;
  } else if (std::strncmp(v, "all", 3) == 0 && depth(v + 3, kDefaultPython, kMaxPython, &n)) {
    s.python = n;
    s.native = v[3] == '\0' ? kDefaultNative : (n < kMaxNative ? n : kMaxNative);
    return s;
  }
  *bad = true;
  return StacksSetting{};
}

void stacks_warning(Env e, char* buf, unsigned long size) {
  const EnvVar& var = env_var(e);
  std::snprintf(buf, size,
                "%s=%s: accepted: N or native:N (return addresses, N 0 to %d), python[:N] (Python "
                "frames, N 1 to %d), all[:N]; keeping %s",
                var.name, env_text(e), kMaxNative, kMaxPython, var.kept);
}

}  // namespace cudapool::shim
