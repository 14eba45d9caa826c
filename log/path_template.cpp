// SPDX-License-Identifier: Apache-2.0
// log/path_template.cpp: see path_template.h.
#include "log/path_template.h"

#include "log/json_text.h"

namespace cudapool::log {

namespace {

// A rank as a launcher sets it (0, 17) or a name of letters, digits, '_' and '-': never '/', never
// "." or "..".
bool plain_rank(std::string_view value) {
  for (const char c : value) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return !value.empty();
}

std::string describe(char c) {
  if (c >= 0x21 && c <= 0x7e) return std::string("%") + c;
  static const char kHex[] = "0123456789abcdef";
  const auto byte = static_cast<unsigned char>(c);
  return std::string("% followed by byte 0x") + kHex[byte >> 4] + kHex[byte & 15];
}

}  // namespace

RankVariable rank_variable(const EnvLookup& env) {
  if (env) {
    for (const char* name : {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}) {
      const char* value = env(name);
      if (value != nullptr && value[0] != '\0') return RankVariable{name, value};
    }
  }
  return RankVariable{};
}

std::string rank_from_env(const EnvLookup& env) {
  RankVariable r = rank_variable(env);
  return r.name != nullptr ? std::move(r.value) : std::string("0");
}

ExpandedPath expand_path_template(std::string_view tmpl, const EnvLookup& env, std::uint64_t pid,
                                  std::string_view host) {
  ExpandedPath out;
  if (tmpl.empty()) {
    out.error = "empty log path";
    return out;
  }
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if (c != '%') {
      out.path.push_back(c);
      continue;
    }
    if (i + 1 == tmpl.size()) {
      out.error = "a lone % at the end (write %% for a percent sign)";
      out.path.clear();
      return out;
    }
    const char spec = tmpl[++i];
    switch (spec) {
      case 'p':
        out.path += std::to_string(pid);
        break;
      case 'r': {
        const RankVariable rank = rank_variable(env);
        if (rank.name == nullptr) {
          out.path.push_back('0');
          break;
        }
        if (!plain_rank(rank.value)) {
          out.error = std::string(rank.name) + " " + json_string(rank.value) +
                      " is not a rank for %r (letters, digits, '_' and '-' only)";
          out.path.clear();
          return out;
        }
        out.path += rank.value;
        break;
      }
      case 'h':
        if (host == "." || host == "..") {
          out.error = "the host name " + json_string(host) + " cannot be a part of a path (%h)";
          out.path.clear();
          return out;
        }
        for (const char h : host) out.path.push_back(h == '/' ? '_' : h);
        break;
      case '%':
        out.path.push_back('%');
        break;
      default:
        out.error = "unknown " + describe(spec) + " at offset " + std::to_string(i - 1) +
                    " (known: %p %r %h %%)";
        out.path.clear();
        return out;
    }
  }
  if (out.path.empty()) out.error = "the log path is empty once expanded";
  return out;
}

}  // namespace cudapool::log
