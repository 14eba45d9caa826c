// tools/analyze/frames.cpp: see frames.h.
#include "tools/analyze/frames.h"

#include <algorithm>

namespace cudapool::analyze {

namespace {

struct Parsed {
  std::string addr;
  std::optional<std::string> path, symbol;
  std::optional<std::uint64_t> offset;
};

// frames.py parse(): "0xADDR" or "0xADDR FILE(SYMBOL+0xOFF)".
Parsed parse(const std::string& text) {
  Parsed p;
  const std::size_t space = text.find(' ');
  p.addr = text.substr(0, space);
  const std::string rest = space == std::string::npos ? "" : text.substr(space + 1);
  if (rest.empty()) return p;
  if (rest.back() == ')' && rest.find('(') != std::string::npos) {
    const std::string inner = rest.substr(0, rest.size() - 1);
    const std::size_t open = inner.rfind('(');
    const std::string path = inner.substr(0, open);
    const std::string sym = inner.substr(open + 1);
    if (!path.empty()) p.path = path;
    if (!sym.empty() && sym[0] != '?' && sym[0] != '+') {
      p.symbol = sym;
      return p;
    }
    std::size_t k = sym.find_first_not_of('?');
    std::string off = k == std::string::npos ? "" : sym.substr(k);
    k = off.find_first_not_of('+');
    off = k == std::string::npos ? "" : off.substr(k);
    if (!path.empty()) p.offset = hex_value(off);
    return p;
  }
  p.path = rest;
  return p;
}

std::string basename(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return base.empty() ? path : base;
}

}  // namespace

Frames::Frames(const JsonValue* summary) {
  if (summary == nullptr) return;
  if (const JsonValue* mods = summary->find("modules"); mods != nullptr && mods->is_array()) {
    for (const JsonValue& m : mods->items) {
      const JsonValue* base = m.find("base");
      const JsonValue* end = m.find("end");
      const JsonValue* path = m.find("path");
      if (base == nullptr || end == nullptr || path == nullptr || !path->is_string()) continue;
      const auto b = base->is_string() ? hex_value(base->text) : std::nullopt;
      const auto e = end->is_string() ? hex_value(end->text) : std::nullopt;
      if (b && e && *b < *e) modules_.emplace_back(*b, *e, path->text);
    }
    std::sort(modules_.begin(), modules_.end());
  }
  if (const JsonValue* leaks = summary->find("leaks"); leaks != nullptr && leaks->is_array()) {
    for (const JsonValue& leak : leaks->items) {
      const JsonValue* bt = leak.is_object() ? leak.find("backtrace") : nullptr;
      if (bt == nullptr || !bt->is_array()) continue;
      for (const JsonValue& f : bt->items) {
        if (!f.is_string() || f.text.find(' ') == std::string::npos) continue;
        const Parsed p = parse(f.text);
        const auto a = hex_value(p.addr);
        if (a && p.path && p.symbol) symbols_.emplace(*a, std::make_pair(*p.path, *p.symbol));
      }
    }
  }
}

std::string Frames::text(const std::string& frame) const {
  Parsed p = parse(frame);
  if (const auto a = hex_value(p.addr); !p.symbol && a) {
    if (const auto it = symbols_.find(*a); it != symbols_.end()) {
      p.path = it->second.first;
      p.symbol = it->second.second;
      p.offset.reset();
    } else {
      auto m = std::upper_bound(
          modules_.begin(), modules_.end(), *a,
          [](std::uint64_t v, const auto& mod) { return v < std::get<0>(mod); });
      if (m != modules_.begin()) {
        --m;
        if (*a < std::get<1>(*m)) {
          p.path = std::get<2>(*m);
          p.offset = *a - std::get<0>(*m);
        }
      }
    }
  }
  std::string out;
  if (!p.path) {
    out = p.addr;
  } else if (p.symbol) {
    out = p.addr + " " + basename(*p.path) + "(" + *p.symbol + ")";
  } else if (p.offset) {
    out = p.addr + " " + basename(*p.path) + "+" + hex_text(*p.offset);
  } else {
    out = p.addr + " " + basename(*p.path);
  }
  if (char_count(out) > kMaxFrameText) out = std::string(first_chars(out, kMaxFrameText)) + "...";
  return out;
}

}  // namespace cudapool::analyze
