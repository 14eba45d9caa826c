// SPDX-License-Identifier: Apache-2.0
// tools/replay/definition_line.cpp: see definition_line.h.
#include "tools/replay/definition_line.h"

#include <optional>

#include "log/fields.h"
#include "tools/replay/flat_json.h"

namespace cudapool::replay {

namespace {

using log::line_field_name;
using log::LineField;

std::string text_of(const JsonField& f) {
  return f.value_escaped ? decode_json_string(f.value) : std::string(f.value);
}

bool space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

// A JSON array of unsigned integers from 1 (the text of a nested value the scanner took), or
// nullopt.
std::optional<std::vector<std::uint64_t>> id_list(const JsonField& f) {
  if (f.kind != JsonKind::kNested || f.value.empty() || f.value[0] != '[') return std::nullopt;
  std::vector<std::uint64_t> out;
  std::string_view s = f.value.substr(1, f.value.size() - 2);  // within the brackets
  std::size_t i = 0;
  while (i < s.size() && space(s[i])) ++i;
  if (i == s.size()) return out;  // []
  for (;;) {
    std::size_t end = i;
    while (end < s.size() && s[end] != ',') ++end;
    std::string_view item = s.substr(i, end - i);
    while (!item.empty() && space(item.back())) item.remove_suffix(1);
    while (!item.empty() && space(item.front())) item.remove_prefix(1);
    if (item.empty() || item.find_first_of("[]{}\"") != std::string_view::npos) {
      return std::nullopt;
    }
    const JsonField number{{}, item, JsonKind::kNumber};
    const auto v = parse_uint(number);
    if (!v || *v == 0) return std::nullopt;
    out.push_back(*v);
    if (end == s.size()) return out;
    i = end + 1;
  }
}

}  // namespace

DefinitionKind definition_kind(std::string_view action) {
  if (action == log::line_part_text(log::LinePart::kPythonFrame)) return DefinitionKind::kFrame;
  if (action == log::line_part_text(log::LinePart::kPythonStack)) return DefinitionKind::kStack;
  return DefinitionKind::kNone;
}

std::string second_definition(DefinitionKind kind, std::uint64_t id) {
  const std::string_view what = log::line_part_text(
      kind == DefinitionKind::kFrame ? log::LinePart::kPythonFrame : log::LinePart::kPythonStack);
  return "a second " + std::string(what) + " " + std::to_string(id) + ": ignored";
}

DefinitionLine read_definition_line(std::string_view text, DefinitionKind kind) {
  DefinitionLine out;
  out.kind = kind;
  const bool frame = kind == DefinitionKind::kFrame;
  const std::string_view id_key =
      line_field_name(frame ? LineField::kPythonFrameId : LineField::kPythonStackId);
  const std::string_view file_key = line_field_name(LineField::kPythonFrameFile);
  const std::string_view line_key = line_field_name(LineField::kPythonFrameLine);
  const std::string_view function_key = line_field_name(LineField::kPythonFrameFunction);
  const std::string_view frames_key = line_field_name(LineField::kPythonStackFrames);
  std::optional<JsonField> id, file, line, function, frames;  // the last of a repeated key
  scan_flat_object(text, [&](const JsonField& f) {
    std::string decoded;
    std::string_view key = f.key;
    if (f.key_escaped) key = decoded = decode_json_string(f.key);
    if (key == id_key) {
      id = f;
    } else if (frame && key == file_key) {
      file = f;
    } else if (frame && key == line_key) {
      line = f;
    } else if (frame && key == function_key) {
      function = f;
    } else if (!frame && key == frames_key) {
      frames = f;
    }
  });
  const std::string what(
      log::line_part_text(frame ? log::LinePart::kPythonFrame : log::LinePart::kPythonStack));
  const auto v = id ? parse_uint(*id) : std::nullopt;
  if (!v || *v == 0) {
    out.why = what + " id is not an unsigned integer from 1";
    return out;
  }
  out.id = *v;
  if (frame) {
    if (!file || file->kind != JsonKind::kString) {
      out.why = what + " file is not a string";
      return out;
    }
    const auto n = line ? parse_uint(*line) : std::nullopt;
    if (!n) {
      out.why = what + " line is not an unsigned integer";
      return out;
    }
    if (!function || function->kind != JsonKind::kString) {
      out.why = what + " function is not a string";
      return out;
    }
    out.file = text_of(*file);
    out.line = *n;
    out.function = text_of(*function);
    return out;
  }
  auto list = frames ? id_list(*frames) : std::nullopt;
  if (!list) {
    out.why = what + " frames is not a list of unsigned integers from 1";
    return out;
  }
  out.frames = std::move(*list);
  return out;
}

}  // namespace cudapool::replay
