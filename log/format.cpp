// log/format.cpp: see format.h. The event formatter writes into raw memory with no bounds checks
// once it knows the buffer holds kMaxEventLine bytes; smaller buffers go through a stack copy.
#include "log/format.h"

#include <time.h>

#include <cstring>

namespace cudapool::log {

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

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
  Cursor c{buf};
  c.lit("{\"seq\":");
  c.u64(r.seq);
  c.lit(",\"t_ns\":");
  c.u64(r.t_ns);
  c.lit(",\"tid\":");
  c.u64(r.tid);
  c.lit(",\"dev\":");
  c.i64(r.device);
  if (r.context != 0) {
    c.lit(",\"ctx\":");
    c.u64(r.context);
  }
  c.lit(",\"action\":\"");
  c.str(name_of(r.action));
  c.lit("\",\"ptr\":");
  c.hex(r.ptr);
  c.lit(",\"size\":");
  c.u64(r.size);
  if (r.block_size != 0) {
    c.lit(",\"block_size\":");
    c.u64(r.block_size);
  }
  if (r.segment != 0) {
    c.lit(",\"segment\":");
    c.hex(r.segment);
  }
  if (r.stream != 0) {
    c.lit(",\"stream\":");
    c.hex(r.stream);
  }
  if (r.action == LogAction::kAlloc) {
    if (r.cache_hit) {
      c.lit(",\"cache_hit\":true");
    } else {
      c.lit(",\"cache_hit\":false");
    }
  }
  if (r.latency_ns != 0) {
    c.lit(",\"latency_ns\":");
    c.u64(r.latency_ns);
  }
  if (r.error != 0) {
    c.lit(",\"error\":");
    c.i64(r.error);
  }
  if (r.entry != nullptr) {
    c.lit(",\"entry\":\"");
    c.safe(r.entry, kMaxEntryText);
    *c.p++ = '"';
  }
  if (r.caller != nullptr) {
    c.lit(",\"caller\":\"");
    c.safe(r.caller, kMaxCallerText);
    *c.p++ = '"';
  }
  if (r.action == LogAction::kOom && r.oom.cause != 0) {
    const OomFigures& o = r.oom;
    c.lit(",\"segment_size\":");
    c.u64(o.segment_size);
    c.lit(",\"device_total\":");
    c.u64(o.device_total);
    if (o.device_free_known) {
      c.lit(",\"device_free\":");
      c.u64(o.device_free);
    }
    if (o.cap != 0) {
      c.lit(",\"cap\":");
      c.u64(o.cap);
    }
    c.lit(",\"reserved\":");
    c.u64(o.reserved);
    c.lit(",\"allocated\":");
    c.u64(o.allocated);
    c.lit(",\"free_blocks\":");
    c.u64(o.free_blocks);
    c.lit(",\"largest_free_block\":");
    c.u64(o.largest_free_block);
    c.lit(",\"cause\":\"");
    c.str(pool::oom_cause_name(static_cast<pool::OomCause>(o.cause - 1)));
    c.lit("\"}\n");
    return static_cast<std::size_t>(c.p - buf);
  }
  const std::size_t frames = r.action == LogAction::kOom ? 0
                             : r.frames < kMaxBacktrace  ? r.frames
                                                         : kMaxBacktrace;
  if (frames > 0) {
    c.lit(",\"backtrace\":[");
    for (std::size_t i = 0; i < frames; ++i) {
      if (i > 0) *c.p++ = ',';
      c.hex(r.backtrace[i]);
    }
    *c.p++ = ']';
  }
  c.lit("}\n");
  return static_cast<std::size_t>(c.p - buf);
}

// Widest line: the fixed text plus every number at its widest (20 digits, 11 for int32, 18 for a
// quoted hex value) and 16 frames.
constexpr std::size_t kWidestEvent =
    sizeof(
        "{\"seq\":,\"t_ns\":,\"tid\":,\"dev\":,\"ctx\":,\"action\":\"\",\"ptr\":,\"size\":"
        ",\"block_size\":,\"segment\":,\"stream\":,\"cache_hit\":false,\"latency_ns\":"
        ",\"error\":,\"entry\":\"\",\"caller\":\"\",\"backtrace\":[]}\n") +
    kMaxEntryText + kMaxCallerText + 20 * 3 + 11 + 3 /* ctx */ + 16 /* longest action name */ + 20 +
    18 + 20 + 18 + 18 + 20 + 11 + kMaxBacktrace * (18 + 1);
static_assert(kWidestEvent <= kMaxEventLine);

void append_u64(std::string& out, std::uint64_t v) {
  out += std::to_string(v);
}

void append_hex(std::string& out, std::uint64_t v) {
  char buf[24];
  Cursor c{buf};
  c.hex(v);
  out.append(buf, static_cast<std::size_t>(c.p - buf));
}

// Length of the valid UTF-8 sequence starting at s[i] (RFC 3629), or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) > 0x9F) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void append_escaped_byte(std::string& out, unsigned char c) {
  out += "\\u00";
  out.push_back(kHexDigits[c >> 4]);
  out.push_back(kHexDigits[c & 15]);
}

void append_string_array(std::string& out, const std::vector<std::string>& items) {
  out.push_back('[');
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_json_string(out, items[i]);
  }
  out.push_back(']');
}

}  // namespace

std::size_t format_event(const LogRecord& record, char* buf, std::size_t cap) {
  if (cap >= kMaxEventLine) return format_event_unchecked(record, buf);
  char local[kMaxEventLine];
  const std::size_t n = format_event_unchecked(record, local);
  if (n > cap) return 0;
  std::memcpy(buf, local, n);
  return n;
}

void append_json_string(std::string& out, std::string_view text) {
  out.push_back('"');
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\b':
          out += "\\b";
          break;
        case '\f':
          out += "\\f";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (c < 0x20) {
            append_escaped_byte(out, c);
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      append_escaped_byte(out, c);
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  out.push_back('"');
}

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(out, text);
  return out;
}

std::string iso8601_utc(std::uint64_t unix_ns) {
  const time_t seconds = static_cast<time_t>(unix_ns / 1000000000u);
  tm utc{};
  gmtime_r(&seconds, &utc);
  char buf[64];
  const std::size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &utc);
  std::string out(buf, n);
  const unsigned micros = static_cast<unsigned>(unix_ns % 1000000000u / 1000u);
  char frac[16];
  frac[0] = '.';
  for (int k = 6, v = static_cast<int>(micros); k >= 1; --k, v /= 10) {
    frac[k] = static_cast<char>('0' + v % 10);
  }
  out.append(frac, 7);
  out.push_back('Z');
  return out;
}

std::string setting_json(const std::string& value) {
  if (value == "True") return "true";
  if (value == "False") return "false";
  bool number = !value.empty();
  bool dot = false;
  for (const char c : value) {
    if (c == '.' && !dot) {
      dot = true;
    } else if (c < '0' || c > '9') {
      number = false;
    }
  }
  if (number && value.front() != '.' && value.back() != '.') return value;
  return json_string(value);
}

std::string format_header(const HeaderInfo& h) {
  std::string out;
  out.reserve(512);
  out += "{\"schema\":";
  append_json_string(out, kSchema);
  out += ",\"version\":";
  append_json_string(out, h.version);
  out += ",\"pid\":";
  append_u64(out, h.pid);
  out += ",\"host\":";
  append_json_string(out, h.host);
  out += ",\"executable\":";
  append_json_string(out, h.executable);
  out += ",\"argv\":";
  append_string_array(out, h.argv);
  out += ",\"start_time\":";
  append_json_string(out, iso8601_utc(h.start_unix_ns));
  out += ",\"start_unix_ns\":";
  append_u64(out, h.start_unix_ns);
  if (h.start_t_ns != 0) {
    out += ",\"start_t_ns\":";
    append_u64(out, h.start_t_ns);
  }
  out += ",\"conf\":";
  append_json_string(out, h.conf);
  out += ",\"conf_source\":";
  append_json_string(out, h.conf_source);
  out += ",\"options\":{";
  for (std::size_t i = 0; i < h.options.size(); ++i) {
    if (i > 0) out.push_back(',');
    append_json_string(out, h.options[i].first);
    out.push_back(':');
    out += h.options[i].second.empty() ? std::string("null") : h.options[i].second;
  }
  out += "},\"devices\":[";
  for (std::size_t i = 0; i < h.devices.size(); ++i) {
    const DeviceInfo& d = h.devices[i];
    if (i > 0) out.push_back(',');
    out += "{\"id\":";
    out += std::to_string(d.id);
    out += ",\"name\":";
    append_json_string(out, d.name);
    out += ",\"total_memory\":";
    append_u64(out, d.total_memory);
    out.push_back('}');
  }
  out += "]}\n";
  return out;
}

std::string format_summary(const Summary& s) {
  std::string out;
  out.reserve(4096 + 160 * s.leaks.size() + 120 * s.modules.size());
  out += "{\"schema\":";
  append_json_string(out, kSchema);
  out += ",\"action\":\"summary\",\"seq\":";
  append_u64(out, s.seq);
  out += ",\"t_ns\":";
  append_u64(out, s.t_ns);
  out += ",\"events\":";
  append_u64(out, s.events);
  out += ",\"devices\":{";
  for (std::size_t i = 0; i < s.devices.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += "\"";
    out += std::to_string(s.devices[i].first);
    out += "\":{\"stats\":{";
    bool first = true;
    pool::for_each_stat(s.devices[i].second, [&](std::string_view name, std::int64_t value) {
      if (!first) out.push_back(',');
      first = false;
      append_json_string(out, name);
      out.push_back(':');
      out += std::to_string(value);
    });
    out += "}";
    if (i < s.fences.size() && !s.fences[i].empty()) {
      out += ",\"fences\":{";
      for (std::size_t k = 0; k < s.fences[i].size(); ++k) {
        if (k > 0) out.push_back(',');
        append_json_string(out, s.fences[i][k].first);
        out.push_back(':');
        append_u64(out, s.fences[i][k].second);
      }
      out += "}";
    }
    out += "}";
  }
  out += "},\"leaks\":[";
  for (std::size_t i = 0; i < s.leaks.size(); ++i) {
    const Leak& l = s.leaks[i];
    if (i > 0) out.push_back(',');
    out += "{\"dev\":";
    out += std::to_string(l.dev);
    out += ",\"ptr\":";
    append_hex(out, l.ptr);
    out += ",\"size\":";
    append_u64(out, l.size);
    out += ",\"block_size\":";
    append_u64(out, l.block_size);
    out += ",\"seq\":";
    append_u64(out, l.seq);
    out += ",\"t_ns\":";
    append_u64(out, l.t_ns);
    out += ",\"tid\":";
    append_u64(out, l.tid);
    if (!l.symbols.empty()) {
      out += ",\"backtrace\":";
      append_string_array(out, l.symbols);
    } else if (!l.frames.empty()) {
      out += ",\"backtrace\":[";
      for (std::size_t k = 0; k < l.frames.size(); ++k) {
        if (k > 0) out.push_back(',');
        append_hex(out, l.frames[k]);
      }
      out.push_back(']');
    }
    out.push_back('}');
  }
  out += "]";
  if (!s.modules.empty()) {
    out += ",\"modules\":[";
    for (std::size_t i = 0; i < s.modules.size(); ++i) {
      if (i > 0) out.push_back(',');
      out += "{\"base\":";
      append_hex(out, s.modules[i].base);
      out += ",\"end\":";
      append_hex(out, s.modules[i].end);
      out += ",\"path\":";
      append_json_string(out, s.modules[i].path);
      out.push_back('}');
    }
    out += "]";
  }
  out += ",\"log_errors\":{\"write_failed\":";
  out += s.write_failed ? "true" : "false";
  out += ",\"records_lost\":";
  append_u64(out, s.records_lost);
  out += "}}\n";
  return out;
}

}  // namespace cudapool::log
