// SPDX-License-Identifier: Apache-2.0
// tools/analyze/frames.cpp: see frames.h.
#include "tools/analyze/frames.h"

#include <algorithm>
#include <tuple>

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
      if (!b || !e || *b >= *e) continue;
      Module mod{*b, *e, ModuleFile{path->text, 0, ""}};
      const JsonValue* bias = m.find("bias");
      const JsonValue* build_id = m.find("build_id");
      if (bias != nullptr && bias->is_string()) mod.file.bias = hex_value(bias->text).value_or(0);
      if (build_id != nullptr && build_id->is_string()) mod.file.build_id = build_id->text;
      modules_.push_back(std::move(mod));
    }
    std::sort(modules_.begin(), modules_.end(), [](const Module& x, const Module& y) {
      return std::tie(x.base, x.end, x.file.path, x.file.bias, x.file.build_id) <
             std::tie(y.base, y.end, y.file.path, y.file.bias, y.file.build_id);
    });
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

const Frames::Module* Frames::module(std::uint64_t address) const {
  auto m = std::upper_bound(modules_.begin(), modules_.end(), address,
                            [](std::uint64_t v, const Module& mod) { return v < mod.base; });
  if (m == modules_.begin()) return nullptr;
  --m;
  return address < m->end ? &*m : nullptr;
}

std::optional<NativeSymbol> Frames::symbol(const std::string& frame) const {
  const auto a = hex_value(frame.substr(0, frame.find(' ')));
  const Module* m = a ? module(*a) : nullptr;
  if (m == nullptr) return std::nullopt;
  return symbolize(m->file, *a);
}

std::string Frames::text(const std::string& frame) const {
  Parsed p = parse(frame);
  std::optional<NativeSymbol> native;
  if (const auto a = hex_value(p.addr); a) {
    const Module* m = module(*a);
    if (m != nullptr) native = symbolize(m->file, *a);
    if (native) {
      p.path = m->file.path;
      p.symbol.reset();
      p.offset = *a - m->base;
      if (!native->function.empty()) p.symbol = native->function + "+" + hex_text(native->offset);
    } else if (!p.symbol) {
      if (const auto it = symbols_.find(*a); it != symbols_.end()) {
        p.path = it->second.first;
        p.symbol = it->second.second;
        p.offset.reset();
      } else if (m != nullptr) {
        p.path = m->file.path;
        p.offset = *a - m->base;
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
  if (native && !native->file.empty()) {
    out += " at " + basename(native->file) + ":" + std::to_string(native->line);
  }
  if (char_count(out) > kMaxFrameText) out = std::string(first_chars(out, kMaxFrameText)) + "...";
  return out;
}

}  // namespace cudapool::analyze
