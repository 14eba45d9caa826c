// tools/replay/flat_json.cpp: see flat_json.h.
#include "tools/replay/flat_json.h"

#include <charconv>
#include <cstring>

namespace cudapool::replay {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

void skip_space(std::string_view s, std::size_t& i) {
  while (i < s.size() && is_space(s[i])) ++i;
}

// At an opening quote; leaves i after the closing quote. out gets the contents (escapes kept).
bool read_string(std::string_view s, std::size_t& i, std::string_view& out) {
  const std::size_t start = ++i;
  while (i < s.size()) {
    const void* hit = std::memchr(s.data() + i, '"', s.size() - i);
    if (hit == nullptr) return false;
    const std::size_t quote = static_cast<std::size_t>(static_cast<const char*>(hit) - s.data());
    // The quote closes the string unless an odd number of backslashes precedes it.
    std::size_t backslashes = 0;
    while (quote - backslashes > start && s[quote - backslashes - 1] == '\\') ++backslashes;
    i = quote + 1;
    if (backslashes % 2 == 0) {
      out = s.substr(start, quote - start);
      return true;
    }
  }
  return false;
}

// At '{' or '['; leaves i after the matching bracket.
bool skip_nested(std::string_view s, std::size_t& i) {
  int depth = 0;
  char stack[64];
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"') {
      std::string_view ignored;
      if (!read_string(s, i, ignored)) return false;
      continue;
    }
    if (c == '{' || c == '[') {
      if (depth == 64) return false;
      stack[depth++] = c == '{' ? '}' : ']';
    } else if (c == '}' || c == ']') {
      if (depth == 0 || stack[depth - 1] != c) return false;
      if (--depth == 0) {
        ++i;
        return true;
      }
    }
    ++i;
  }
  return false;
}

bool read_scalar(std::string_view s, std::size_t& i, std::string_view& out, JsonKind& kind) {
  const std::size_t start = i;
  while (i < s.size() && s[i] != ',' && s[i] != '}' && !is_space(s[i])) ++i;
  out = s.substr(start, i - start);
  if (out.empty()) return false;
  if (out == "true" || out == "false" || out == "null") {
    kind = JsonKind::kLiteral;
    return true;
  }
  for (const char c : out) {
    const bool ok =
        (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
    if (!ok) return false;
  }
  kind = JsonKind::kNumber;
  return true;
}

}  // namespace

bool scan_flat_object_impl(std::string_view s, FieldVisitor visit, void* context) {
  std::size_t i = 0;
  skip_space(s, i);
  if (i >= s.size() || s[i] != '{') return false;
  ++i;
  skip_space(s, i);
  if (i < s.size() && s[i] == '}') {
    ++i;
  } else {
    while (true) {
      skip_space(s, i);
      if (i >= s.size() || s[i] != '"') return false;
      JsonField field{};
      if (!read_string(s, i, field.key)) return false;
      skip_space(s, i);
      if (i >= s.size() || s[i] != ':') return false;
      ++i;
      skip_space(s, i);
      if (i >= s.size()) return false;
      if (s[i] == '"') {
        field.kind = JsonKind::kString;
        if (!read_string(s, i, field.value)) return false;
      } else if (s[i] == '{' || s[i] == '[') {
        const std::size_t start = i;
        if (!skip_nested(s, i)) return false;
        field.kind = JsonKind::kNested;
        field.value = s.substr(start, i - start);
      } else if (!read_scalar(s, i, field.value, field.kind)) {
        return false;
      }
      visit(context, field);
      skip_space(s, i);
      if (i >= s.size()) return false;
      if (s[i] == ',') {
        ++i;
        continue;
      }
      if (s[i] == '}') {
        ++i;
        break;
      }
      return false;
    }
  }
  skip_space(s, i);
  return i == s.size();
}

std::optional<std::uint64_t> parse_unsigned(const JsonField& field) {
  std::string_view text = field.value;
  int base = 10;
  if (field.kind == JsonKind::kString) {
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
      text.remove_prefix(2);
      base = 16;
    }
  } else if (field.kind != JsonKind::kNumber) {
    return std::nullopt;
  }
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace cudapool::replay
