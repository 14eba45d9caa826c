// tools/analyze/fast_line.cpp: see fast_line.h.
#include "tools/analyze/fast_line.h"

#include <cstdint>
#include <cstring>
#include <optional>

#include "log/record.h"

namespace cudapool::analyze {

namespace {

using replay::JsonKind;

enum Key : int {
  kSeq,
  kTNs,
  kTid,
  kDev,
  kCtx,
  kAction,
  kPtr,
  kSize,
  kBlockSize,
  kSegment,
  kStream,
  kCacheHit,
  kLatencyNs,
  kBacktrace,
  kNone
};

constexpr unsigned bit(Key k) {
  return 1u << k;
}

constexpr unsigned kRequired =
    bit(kSeq) | bit(kTNs) | bit(kTid) | bit(kDev) | bit(kAction) | bit(kPtr) | bit(kSize);

Key key_of(std::string_view key) {
  const auto is = [&](const char* name) { return std::memcmp(key.data(), name, key.size()) == 0; };
  switch (key.size()) {
    case 3:
      return is("seq")   ? kSeq
             : is("tid") ? kTid
             : is("dev") ? kDev
             : is("ctx") ? kCtx
             : is("ptr") ? kPtr
                         : kNone;
    case 4:
      return is("t_ns") ? kTNs : is("size") ? kSize : kNone;
    case 6:
      return is("action") ? kAction : is("stream") ? kStream : kNone;
    case 7:
      return is("segment") ? kSegment : kNone;
    case 9:
      return is("cache_hit") ? kCacheHit : is("backtrace") ? kBacktrace : kNone;
    case 10:
      return is("block_size") ? kBlockSize : is("latency_ns") ? kLatencyNs : kNone;
    default:
      return kNone;
  }
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A JSON integer as the writer writes it: 1 to 19 digits (no uint64 overflows), no leading zero,
// no sign, fraction or exponent. Leaves p after it.
bool read_digits(const char*& p, const char* end, std::uint64_t* v) {
  const char* const start = p;
  std::uint64_t x = 0;
  while (p < end && is_digit(*p)) x = x * 10 + static_cast<std::uint64_t>(*p++ - '0');
  const std::size_t n = static_cast<std::size_t>(p - start);
  if (n == 0 || n > 19 || (n > 1 && *start == '0')) return false;
  if (p < end && (*p == '.' || *p == 'e' || *p == 'E')) return false;
  *v = x;
  return true;
}

int hex_value(char c) {
  return c >= '0' && c <= '9'   ? c - '0'
         : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                : -1;
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

}  // namespace

// Where each key's field goes in RawFields (latency_ns: nowhere, as RawFields::take).
constexpr std::optional<JsonField> RawFields::*kSlots[kNone] = {&RawFields::seq,
                                                                &RawFields::t_ns,
                                                                &RawFields::tid,
                                                                &RawFields::dev,
                                                                &RawFields::ctx,
                                                                &RawFields::action,
                                                                &RawFields::ptr,
                                                                &RawFields::size,
                                                                &RawFields::block_size,
                                                                &RawFields::segment,
                                                                &RawFields::stream,
                                                                &RawFields::cache_hit,
                                                                nullptr,
                                                                &RawFields::backtrace};

bool fast_event_line(std::string_view text, RawFields& raw, std::string* action, Event& e) {
  const char* p = text.data();
  const char* const end = p + text.size();
  if (text.size() < 2 || p[0] != '{' || end[-1] != '}') return false;
  raw.clear();
  ++p;
  unsigned seen = 0;
  std::uint64_t values[kNone] = {};  // the integers' and hex strings' values, by key
  bool cache_hit = false;
  std::string_view action_name;
  for (;;) {
    if (p == end || *p != '"') return false;
    const char* const k = ++p;
    while (p < end && ((*p >= 'a' && *p <= 'z') || *p == '_')) ++p;
    if (end - p < 2 || p[0] != '"' || p[1] != ':') return false;
    const std::string_view key(k, static_cast<std::size_t>(p - k));
    p += 2;
    const Key id = key_of(key);
    if (id == kNone || (seen & bit(id)) != 0) return false;
    seen |= bit(id);
    const char* const value = p;
    JsonField f{key, {}, JsonKind::kNumber, false, false};
    switch (id) {
      case kPtr:
      case kSegment:
      case kStream:
        if (!read_hex(p, end, &values[id], &f.value)) return false;
        f.kind = JsonKind::kString;
        break;
      case kAction: {
        if (p == end || *p != '"') return false;
        const char* const name = ++p;
        while (p < end && ((*p >= 'a' && *p <= 'z') || *p == '_')) ++p;
        if (p == name || p == end || *p != '"') return false;
        action_name = std::string_view(name, static_cast<std::size_t>(p - name));
        if (action_name == "summary") return false;  // the summary line
        ++p;
        f.kind = JsonKind::kString;
        f.value = action_name;
        break;
      }
      case kCacheHit:
        f.kind = JsonKind::kLiteral;
        if (end - p >= 4 && std::memcmp(p, "true", 4) == 0) {
          p += 4;
          cache_hit = true;
        } else if (end - p >= 5 && std::memcmp(p, "false", 5) == 0) {
          p += 5;
        } else {
          return false;
        }
        f.value = std::string_view(value, static_cast<std::size_t>(p - value));
        break;
      case kBacktrace:
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
        f.kind = JsonKind::kNested;
        f.value = std::string_view(value, static_cast<std::size_t>(p - value));
        break;
      default:  // the integers
        if (!read_digits(p, end, &values[id])) return false;
        f.value = std::string_view(value, static_cast<std::size_t>(p - value));
        break;
    }
    if (kSlots[id] != nullptr) raw.*kSlots[id] = f;
    if (p == end) return false;
    if (*p == ',') {
      ++p;
      continue;
    }
    if (*p == '}' && p + 1 == end) break;
    return false;
  }
  if ((seen & kRequired) != kRequired || values[kDev] >= kDeviceLimit ||
      values[kCtx] >= kContextLimit) {
    return false;
  }
  e = Event{};
  e.seq = values[kSeq];
  e.t_ns = values[kTNs];
  e.tid = values[kTid];
  e.ptr = values[kPtr];
  e.size = values[kSize];
  e.dev = static_cast<int>(values[kDev]);
  e.ctx = static_cast<int>(values[kCtx]);
  e.block_size = values[kSize];
  if ((seen & bit(kBlockSize)) != 0) {
    e.block_size = values[kBlockSize];
    raw.figures[0] = raw.block_size;  // an oom event's figure too (RawFields::take)
  }
  e.has_segment = (seen & bit(kSegment)) != 0;
  e.segment = values[kSegment];
  e.stream = values[kStream];
  e.cache_hit = cache_hit;
  action->assign(action_name);
  log::LogAction a{};
  e.action = log::action_from_name(action_name, &a) ? static_cast<int>(a) : kUnknownAction;
  return true;
}

}  // namespace cudapool::analyze
