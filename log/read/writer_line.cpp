// SPDX-License-Identifier: Apache-2.0
// log/read/writer_line.cpp: see writer_line.h.
#include "log/read/writer_line.h"

#include <array>
#include <bit>
#include <cstring>

namespace cudapool::log {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// 1 to 19 digits (no uint64 overflows), no leading zero. Leaves p after them.
bool read_digits(const char*& p, const char* end, std::uint64_t* v) {
  const char* const start = p;
  std::uint64_t x = 0;
  while (p < end && is_digit(*p)) x = x * 10 + static_cast<std::uint64_t>(*p++ - '0');
  const std::size_t n = static_cast<std::size_t>(p - start);
  if (n == 0 || n > 19 || (n > 1 && *start == '0')) return false;
  *v = x;
  return true;
}

constexpr std::array<std::int8_t, 256> kHexValue = [] {
  std::array<std::int8_t, 256> v{};
  v.fill(-1);
  for (int c = '0'; c <= '9'; ++c)
    v[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) {
    v[static_cast<std::size_t>(c)] = static_cast<std::int8_t>(c - 'a' + 10);
    v[static_cast<std::size_t>(c - 'a' + 'A')] = static_cast<std::int8_t>(c - 'a' + 10);
  }
  return v;
}();

int hex_value(char c) {
  return kHexValue[static_cast<unsigned char>(c)];
}

// "0x" and 1 to 16 hex digits, quoted. Leaves p after the closing quote; *text: the text
// between the quotes.
bool read_hex(const char*& p, const char* end, std::uint64_t* v, std::string_view* text) {
  if (end - p < 5 || p[0] != '"' || p[1] != '0' || p[2] != 'x') return false;
  const char* const start = p + 1;
  p += 3;
  std::uint64_t x = 0;
  int d;
  const char* const first = p;
  while (p < end && (d = hex_value(*p)) >= 0) {
    x = x << 4 | static_cast<std::uint64_t>(d);
    ++p;
  }
  const std::ptrdiff_t n = p - first;
  if (n == 0 || n > 16 || p == end || *p != '"') return false;
  *text = std::string_view(start, static_cast<std::size_t>(p - start));
  ++p;
  *v = x;
  return true;
}

// A string of 1 or more printable ASCII characters, no quote or backslash (no escape), quoted;
// an action's name: of [a-z_] only. Leaves p after the closing quote; *text: between the quotes.
bool read_string(const char*& p, const char* end, bool name, std::string_view* text) {
  if (p == end || *p != '"') return false;
  const char* const start = ++p;
  if (name) {
    while (p < end && ((*p >= 'a' && *p <= 'z') || *p == '_')) ++p;
  } else {
    while (p < end && *p >= ' ' && *p <= '~' && *p != '"' && *p != '\\') ++p;
  }
  if (p == start || p == end || *p != '"') return false;
  *text = std::string_view(start, static_cast<std::size_t>(p - start));
  ++p;
  return true;
}

// `"name":` of each event field as up to three little-endian words and their masks: the key the
// writer's order puts next is matched in one to three compares.
static_assert(std::endian::native == std::endian::little);
struct KeyWords {
  std::uint64_t word[3] = {};
  std::uint64_t mask[3] = {};
  std::size_t words = 0, size = 0;
};
constexpr std::array<KeyWords, kEventFieldCount> kKeyWords = [] {
  std::array<KeyWords, kEventFieldCount> out{};
  for (std::size_t i = 0; i < kEventFieldCount; ++i) {
    const std::string_view name = kEventFields[i].name;
    KeyWords& k = out[i];
    const auto put = [&](char c) {
      const std::size_t w = k.size / 8, shift = 8 * (k.size % 8);
      k.word[w] |= std::uint64_t{static_cast<unsigned char>(c)} << shift;
      k.mask[w] |= std::uint64_t{0xff} << shift;
      ++k.size;
    };
    put('"');
    for (const char c : name) put(c);
    put('"');
    put(':');
    k.words = (k.size + 7) / 8;
  }
  return out;
}();
static_assert([] {
  for (const KeyWords& k : kKeyWords) {
    if (k.size > 24) return false;
  }
  return true;
}());

// Whether the key at p is k (false also when fewer than k's words are left).
bool key_at(const char* p, const char* end, const KeyWords& k) {
  if (static_cast<std::size_t>(end - p) < 8 * k.words) return false;
  for (std::size_t w = 0; w < k.words; ++w) {
    std::uint64_t x;
    std::memcpy(&x, p + 8 * w, 8);
    if ((x & k.mask[w]) != k.word[w]) return false;
  }
  return true;
}

// The key at p (at its opening quote) and its colon: the field, or EventField::kCount. Tries the
// fields from next on first (the writer's order), then looks the key up. Leaves p after the colon.
EventField read_key(const char*& p, const char* end, std::size_t next, std::uint32_t accepted) {
  for (std::size_t i = next; i < kEventFieldCount; ++i) {
    if ((accepted & field_bit(static_cast<EventField>(i))) != 0 && key_at(p, end, kKeyWords[i])) {
      p += kKeyWords[i].size;
      return static_cast<EventField>(i);
    }
  }
  if (p == end || *p != '"') return EventField::kCount;
  const char* const k = ++p;
  const void* const quote = std::memchr(p, '"', static_cast<std::size_t>(end - p));
  if (quote == nullptr) return EventField::kCount;
  p = static_cast<const char*>(quote);
  if (end - p < 2 || p[1] != ':') return EventField::kCount;
  p += 2;
  // No event field, or an escape in the key: kCount.
  return event_field_of(std::string_view(k, static_cast<std::size_t>(p - 2 - k)));
}

// The value of a field of the kind at p, into *f. Leaves p after it.
bool read_value(EventField id, const char*& p, const char* end, WriterField* f) {
  const FieldKind kind = event_field(id).kind;
  const char* const start = p;
  f->negative = false;
  switch (kind) {
    case FieldKind::kInt:
      if (p < end && *p == '-') {
        ++p;
        f->negative = true;
        if (p < end && *p == '0') return false;  // -0
      }
      [[fallthrough]];
    case FieldKind::kUint:
      if (!read_digits(p, end, &f->value)) return false;
      f->text = std::string_view(start, static_cast<std::size_t>(p - start));
      return true;
    case FieldKind::kHex:
      return read_hex(p, end, &f->value, &f->text);
    case FieldKind::kString:
      f->value = 0;
      return read_string(p, end, id == EventField::kAction, &f->text);
    case FieldKind::kBool:
      if (end - p >= 4 && std::memcmp(p, "true", 4) == 0) {
        p += 4;
        f->value = 1;
      } else if (end - p >= 5 && std::memcmp(p, "false", 5) == 0) {
        p += 5;
        f->value = 0;
      } else {
        return false;
      }
      f->text = std::string_view(start, static_cast<std::size_t>(p - start));
      return true;
    case FieldKind::kHexList:
      if (p == end || *p != '[') return false;
      ++p;
      if (p < end && *p != ']') {
        for (;;) {  // hex strings, a comma between two
          std::uint64_t ignored_value = 0;
          std::string_view ignored_text;
          if (!read_hex(p, end, &ignored_value, &ignored_text)) return false;
          if (p == end || *p != ',') break;
          ++p;
        }
      }
      if (p == end || *p != ']') return false;
      ++p;
      f->value = 0;
      f->text = std::string_view(start, static_cast<std::size_t>(p - start));
      return true;
    case FieldKind::kObject:
    case FieldKind::kList:
    case FieldKind::kStringList:
      break;  // no event field's (the general path reads one)
  }
  return false;
}

}  // namespace

bool scan_writer_line(std::string_view text, std::uint32_t accepted, WriterLine* out) {
  const char* p = text.data();
  const char* const end = p + text.size();
  if (text.size() < 2 || p[0] != '{' || end[-1] != '}') return false;
  ++p;
  std::uint32_t seen = 0;
  std::size_t next = 0;  // the first field the writer's order may put next
  for (;;) {
    const EventField id = read_key(p, end, next, accepted);
    if (id == EventField::kCount) return false;
    next = static_cast<std::size_t>(id) + 1;
    const std::uint32_t b = field_bit(id);
    if ((accepted & b) == 0 || (seen & b) != 0) return false;
    seen |= b;
    WriterField& f = out->fields[static_cast<std::size_t>(id)];
    if (!read_value(id, p, end, &f)) return false;
    if (p == end) return false;
    if (*p == ',') {
      ++p;
      continue;
    }
    if (*p == '}' && p + 1 == end) break;
    return false;
  }
  out->present = seen;
  if ((seen & kRequiredEventFields) != kRequiredEventFields) return false;
  if (out->fields[static_cast<std::size_t>(EventField::kDev)].value >= kDeviceLimit) return false;
  if (out->has(EventField::kCtx) && (*out)[EventField::kCtx].value >= kContextLimit) return false;
  return (*out)[EventField::kAction].text != kSummaryAction;  // the summary line
}

}  // namespace cudapool::log
