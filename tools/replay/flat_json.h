// tools/replay/flat_json.h: a fast scanner for one JSON object per line, handing each top-level
// key and its raw value to a visitor. Nested values are validated for balance and skipped, string
// escapes are left encoded. It exists because nlohmann::json is too slow for millions of log lines
// a second; it is not a general JSON parser (the header line is read with nlohmann::json).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

namespace cudapool::replay {

enum class JsonKind : std::uint8_t { kString, kNumber, kLiteral, kNested };

struct JsonField {
  std::string_view key;    // without quotes, escapes not decoded
  std::string_view value;  // strings without quotes; other kinds as written
  JsonKind kind;
};

using FieldVisitor = void (*)(void* context, const JsonField& field);
bool scan_flat_object_impl(std::string_view line, FieldVisitor visit, void* context);

// Calls visit(field) for each top-level field. Returns false when the line is not one well-formed
// JSON object (nothing but white space may follow it); fields before the fault were visited.
template <class Visit>
bool scan_flat_object(std::string_view line, Visit&& visit) {
  using V = std::remove_reference_t<Visit>;
  return scan_flat_object_impl(
      line, [](void* context, const JsonField& field) { (*static_cast<V*>(context))(field); },
      const_cast<void*>(static_cast<const void*>(&visit)));
}

// Numbers as the log writes them: a non-negative decimal integer, or a string holding a decimal
// integer or a 0x-prefixed hex integer. std::nullopt for anything else (overflow included).
std::optional<std::uint64_t> parse_unsigned(const JsonField& field);

}  // namespace cudapool::replay
