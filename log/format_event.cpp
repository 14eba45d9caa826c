// SPDX-License-Identifier: Apache-2.0
// log/format_event.cpp: the event line (format_event, see format.h). The formatter writes into raw
// memory with no bounds checks once it knows the buffer holds kMaxEventLine bytes; smaller buffers
// go through a stack copy. Its keys are log/fields.def's (fields.h). It allocates nothing (the
// writer thread calls it). The header and summary lines are in format_lines.cpp, JSON text for
// std::string in json_text.cpp.
#include <cstring>

#include "log/fields.h"
#include "log/format.h"
#include "log/json_text.h"

namespace cudapool::log {

namespace {

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

constexpr std::uint64_t kPow10[20] = {1ull,
                                      10ull,
                                      100ull,
                                      1000ull,
                                      10000ull,
                                      100000ull,
                                      1000000ull,
                                      10000000ull,
                                      100000000ull,
                                      1000000000ull,
                                      10000000000ull,
                                      100000000000ull,
                                      1000000000000ull,
                                      10000000000000ull,
                                      100000000000000ull,
                                      1000000000000000ull,
                                      10000000000000000ull,
                                      100000000000000000ull,
                                      1000000000000000000ull,
                                      10000000000000000000ull};

// The action names with their lengths, built once from action_name().
struct ActionNames {
  std::string_view names[static_cast<int>(kLastLogAction) + 1];
  ActionNames() {
    for (int a = 0; a <= static_cast<int>(kLastLogAction); ++a) {
      names[a] = action_name(static_cast<LogAction>(a));
    }
  }
};

std::string_view name_of(LogAction action) {
  static const ActionNames table;
  const auto index = static_cast<std::size_t>(action);
  return index <= static_cast<std::size_t>(kLastLogAction) ? table.names[index]
                                                           : std::string_view("unknown");
}

// An unchecked cursor: the caller guarantees room (kMaxEventLine).
constexpr std::size_t kMaxEntryText = 64;    // a driver entry point's name
constexpr std::size_t kMaxCallerText = 160;  // a library and symbol

struct Cursor {
  char* p;

  template <std::size_t N>
  void lit(const char (&s)[N]) {
    std::memcpy(p, s, N - 1);
    p += N - 1;
  }
  // `,"name":` of a field from log/fields.def (without the comma for the line's first field).
  void key(EventField f, bool first = false) {
    const JsonKey& k = event_key(f);
    const std::size_t skip = first ? 1 : 0;
    std::memcpy(p, k.text + skip, k.size - skip);
    p += k.size - skip;
  }
  void str(std::string_view s) {
    std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  // At most max bytes of a C string, each byte outside [A-Za-z0-9._+:()/-] written as '?' (no
  // JSON escape is ever needed).
  void safe(const char* s, std::size_t max) {
    for (std::size_t i = 0; i < max && s[i] != '\0'; ++i) {
      const char ch = s[i];
      const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                      (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '+' ||
                      ch == ':' || ch == '(' || ch == ')' || ch == '/' || ch == '-';
      *p++ = ok ? ch : '?';
    }
  }
  // Decimal, two digits at a time from the end.
  void u64(std::uint64_t v) {
    // Digits: log10 from the bit length (1233 / 4096 ~ log10(2)), corrected by one comparison.
    const int bits = 64 - __builtin_clzll(v | 1);
    int n = (bits * 1233) >> 12;
    n += v >= kPow10[n] ? 1 : 0;
    if (n == 0) n = 1;
    char* q = p + n;
    p = q;
    while (v >= 100) {
      const auto pair = static_cast<std::size_t>(v % 100) * 2;
      v /= 100;
      q -= 2;
      std::memcpy(q, kDigitPairs + pair, 2);
    }
    if (v >= 10) {
      std::memcpy(q - 2, kDigitPairs + v * 2, 2);
    } else {
      q[-1] = static_cast<char>('0' + v);
    }
  }
  void i64(std::int64_t v) {
    if (v < 0) {
      *p++ = '-';
      u64(~static_cast<std::uint64_t>(v) + 1);
    } else {
      u64(static_cast<std::uint64_t>(v));
    }
  }
  // "0x..." with the quotes, lower case, no leading zeros.
  void hex(std::uint64_t v) {
    const int digits = v == 0 ? 1 : (67 - __builtin_clzll(v)) / 4;
    p[0] = '"';
    p[1] = '0';
    p[2] = 'x';
    char* q = p + 3 + digits;
    *q = '"';
    p = q + 1;
    for (int i = 0; i < digits; ++i) {
      *--q = kHexDigits[v & 15];
      v >>= 4;
    }
  }
};

std::size_t format_event_unchecked(const LogRecord& r, char* buf) {
  using F = EventField;
  Cursor c{buf};
  *c.p++ = '{';
  c.key(F::kSeq, /*first=*/true);
  c.u64(r.seq);
  c.key(F::kTNs);
  c.u64(r.t_ns);
  c.key(F::kTid);
  c.u64(r.tid);
  c.key(F::kDev);
  c.i64(r.device);
  if (r.ctx != 0) {
    c.key(F::kCtx);
    c.u64(r.ctx);
  }
  c.key(F::kAction);
  *c.p++ = '"';
  c.str(name_of(r.action));
  *c.p++ = '"';
  c.key(F::kPtr);
  c.hex(r.ptr);
  c.key(F::kSize);
  c.u64(r.size);
  if (r.block_size != 0) {
    c.key(F::kBlockSize);
    c.u64(r.block_size);
  }
  if (r.segment != 0) {
    c.key(F::kSegment);
    c.hex(r.segment);
  }
  if (r.stream != 0) {
    c.key(F::kStream);
    c.hex(r.stream);
  }
  if (r.action == LogAction::kAlloc) {
    c.key(F::kCacheHit);
    if (r.cache_hit) {
      c.lit("true");
    } else {
      c.lit("false");
    }
  }
  if (r.latency_ns != 0) {
    c.key(F::kLatencyNs);
    c.u64(r.latency_ns);
  }
  if (r.error != 0) {
    c.key(F::kError);
    c.i64(r.error);
  }
  if (r.entry != nullptr) {
    c.key(F::kEntry);
    *c.p++ = '"';
    c.safe(r.entry, kMaxEntryText);
    *c.p++ = '"';
  }
  if (r.caller != nullptr) {
    c.key(F::kCaller);
    *c.p++ = '"';
    c.safe(r.caller, kMaxCallerText);
    *c.p++ = '"';
  }
  if (r.action == LogAction::kEmptyCache && r.requested_by != 0) {
    c.key(F::kRequestedBy);
    c.u64(r.requested_by);
  }
  if (r.action == LogAction::kOom && r.oom.cause != 0) {
    const OomFigures& o = r.oom;
    c.key(F::kSegmentSize);
    c.u64(o.segment_size);
    c.key(F::kDeviceTotal);
    c.u64(o.device_total);
    if (o.device_free_known) {
      c.key(F::kDeviceFree);
      c.u64(o.device_free);
    }
    if (o.cap != 0) {
      c.key(F::kCap);
      c.u64(o.cap);
    }
    c.key(F::kReserved);
    c.u64(o.reserved);
    c.key(F::kAllocated);
    c.u64(o.allocated);
    c.key(F::kFreeBlocks);
    c.u64(o.free_blocks);
    c.key(F::kLargestFreeBlock);
    c.u64(o.largest_free_block);
    c.key(F::kCause);
    *c.p++ = '"';
    c.str(pool::oom_cause_name(static_cast<pool::OomCause>(o.cause - 1)));
    c.lit("\"}\n");
    return static_cast<std::size_t>(c.p - buf);
  }
  const std::size_t frames = r.action == LogAction::kOom ? 0
                             : r.frames < kMaxBacktrace  ? r.frames
                                                         : kMaxBacktrace;
  if (frames > 0) {
    c.key(F::kBacktrace);
    *c.p++ = '[';
    for (std::size_t i = 0; i < frames; ++i) {
      if (i > 0) *c.p++ = ',';
      c.hex(r.backtrace[i]);
    }
    *c.p++ = ']';
  }
  if (r.python_stack != 0 && r.action != LogAction::kOom) {
    c.key(F::kPythonStack);
    c.u64(r.python_stack);
  }
  c.lit("}\n");
  return static_cast<std::size_t>(c.p - buf);
}

// The widest value of each field (20 digits for an unsigned integer, 11 for an int32, 18 for a
// quoted hex value, strings and lists with their quotes and brackets). An oom event's figures
// never come with a backtrace (record.h's union).
constexpr std::size_t widest_value(EventField f) {
  using F = EventField;
  switch (f) {
    case F::kDev:
    case F::kError:
      return 11;
    case F::kCtx:
      return 3;
    case F::kAction:
      return 2 + 16;  // the longest action name
    case F::kPtr:
    case F::kSegment:
    case F::kStream:
      return 18;
    case F::kCacheHit:
      return 5;
    case F::kEntry:
      return 2 + kMaxEntryText;
    case F::kCaller:
      return 2 + kMaxCallerText;
    case F::kCause:
      return 2 + 20;
    case F::kBacktrace:
      return 2 + kMaxBacktrace * (18 + 1);
    case F::kSeq:
    case F::kTNs:
    case F::kTid:
    case F::kSize:
    case F::kBlockSize:
    case F::kLatencyNs:
    case F::kRequestedBy:
    case F::kPythonStack:
    case F::kSegmentSize:
    case F::kDeviceTotal:
    case F::kDeviceFree:
    case F::kCap:
    case F::kReserved:
    case F::kAllocated:
    case F::kFreeBlocks:
    case F::kLargestFreeBlock:
    case F::kCount:
      return 20;
  }
  return 20;
}

// The widest line: '{', every field's key and widest value but the oom figures (or the backtrace,
// whichever is wider), "}\n".
constexpr std::size_t widest_event() {
  std::size_t common = 1 + 2, figures = 0;
  for (std::size_t i = 0; i < kEventFieldCount; ++i) {
    const auto f = static_cast<EventField>(i);
    const std::size_t width = event_key(f).size + widest_value(f);
    if (kEventFields[i].actions == "oom") {
      figures += width;
    } else if (f != EventField::kBacktrace) {
      common += width;
    }
  }
  const std::size_t backtrace =
      event_key(EventField::kBacktrace).size + widest_value(EventField::kBacktrace);
  return common + (figures > backtrace ? figures : backtrace);
}
constexpr std::size_t kWidestEvent = widest_event();
static_assert(kWidestEvent <= kMaxEventLine);

}  // namespace

std::size_t format_event(const LogRecord& record, char* buf, std::size_t cap) {
  if (cap >= kMaxEventLine) return format_event_unchecked(record, buf);
  char local[kMaxEventLine];
  const std::size_t n = format_event_unchecked(record, local);
  if (n > cap) return 0;
  std::memcpy(buf, local, n);
  return n;
}

}  // namespace cudapool::log
