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

namespace {

// Walks the template: on_literal(c) for each byte that stands for itself (%% for a '%'),
// on_field(spec) for %p, %r and %h, which returns "" or the error that ends the walk. Returns ""
// or the error: an unknown %x, a lone % at the end, or on_field's. The one reading of the syntax,
// for the expansion and the glob.
template <typename Literal, typename Field>
std::string walk_template(std::string_view tmpl, Literal on_literal, Field on_field) {
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    const char c = tmpl[i];
    if (c != '%') {
      on_literal(c);
      continue;
    }
    if (i + 1 == tmpl.size()) return "a lone % at the end (write %% for a percent sign)";
    const char spec = tmpl[++i];
    switch (spec) {
      case 'p':
      case 'r':
      case 'h': {
        std::string error = on_field(spec);
        if (!error.empty()) return error;
        break;
      }
      case '%':
        on_literal('%');
        break;
      default:
        return "unknown " + describe(spec) + " at offset " + std::to_string(i - 1) +
               " (known: %p %r %h %%)";
    }
  }
  return {};
}

}  // namespace

ExpandedPath expand_path_template(std::string_view tmpl, const EnvLookup& env, std::uint64_t pid,
                                  std::string_view host) {
  ExpandedPath out;
  if (tmpl.empty()) {
    out.error = "empty log path";
    return out;
  }
  out.error = walk_template(
      tmpl, [&](char c) { out.path.push_back(c); },
      [&](char spec) -> std::string {
        if (spec == 'p') {
          out.path += std::to_string(pid);
        } else if (spec == 'r') {
          const RankVariable rank = rank_variable(env);
          if (rank.name == nullptr) {
            out.path.push_back('0');
          } else if (!plain_rank(rank.value)) {
            return std::string(rank.name) + " " + json_string(rank.value) +
                   " is not a rank for %r (letters, digits, '_' and '-' only)";
          } else {
            out.path += rank.value;
          }
        } else {
          if (host == "." || host == "..") {
            return "the host name " + json_string(host) + " cannot be a part of a path (%h)";
          }
          for (const char h : host) out.path.push_back(h == '/' ? '_' : h);
        }
        return {};
      });
  if (!out.error.empty()) {
    out.path.clear();
  } else if (out.path.empty()) {
    out.error = "the log path is empty once expanded";
  }
  return out;
}

ExpandedPath path_template_glob(std::string_view tmpl) {
  ExpandedPath out;
  if (tmpl.empty()) {
    out.error = "empty log path";
    return out;
  }
  out.error = walk_template(
      tmpl,
      [&](char c) {
        if (c == '\\' || c == '*' || c == '?' || c == '[') out.path.push_back('\\');
        out.path.push_back(c);
      },
      [&](char) -> std::string {
        out.path.push_back('*');
        return {};
      });
  if (!out.error.empty()) out.path.clear();
  return out;
}

}  // namespace cudapool::log
