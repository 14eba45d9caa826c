// SPDX-License-Identifier: Apache-2.0
// pool/summary.cpp: see summary.h. Units follow memory_summary(): sizes switch to the next binary
// prefix from 768 of the current one, counts to K/M from 750 thousand; a pool's rows use the unit
// of the device-wide row above them (their own where that one is impossible).
#include "pool/summary.h"

#include <array>
#include <cstdio>
#include <map>
#include <utility>

namespace cudapool::pool {

namespace {

constexpr std::size_t kWidth = 75;
constexpr std::string_view kImpossible = "impossible";  // 10 characters: a cell's width
constexpr std::array<const char*, 4> kFields = {"current", "peak", "allocated", "freed"};

using Cells = std::array<const SummaryCell*, 4>;

std::string format_size(std::uint64_t value, double unit_ref) {
  static constexpr std::array<const char*, 6> kPrefixes = {"B  ", "KiB", "MiB",
                                                           "GiB", "TiB", "PiB"};
  std::size_t prefix = 0;
  while (prefix + 1 < kPrefixes.size() && unit_ref >= 768 * 1024) {
    ++prefix;
    value /= 1024;
    unit_ref /= 1024;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%6llu %s", static_cast<unsigned long long>(value),
                kPrefixes[prefix]);
  return buf;
}

std::string format_count(std::uint64_t value, double unit_ref) {
  static constexpr std::array<const char*, 3> kPrefixes = {" ", "K", "M"};
  std::size_t prefix = 0;
  while (prefix + 1 < kPrefixes.size() && unit_ref >= 750 * 1000) {
    ++prefix;
    value /= 1000;
    unit_ref /= 1000;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%7llu %s ", static_cast<unsigned long long>(value),
                kPrefixes[prefix]);
  return buf;
}

using Formatter = std::string (*)(std::uint64_t, double);

// A cell: the value in the unit its reference (the device-wide row's) calls for.
std::string cell(const SummaryCell& value, const SummaryCell& ref, Formatter f) {
  if (!value.figure) return std::string(kImpossible);
  const std::uint64_t unit_ref = ref.figure ? *ref.figure : *value.figure;
  return f(*value.figure, static_cast<double>(unit_ref));
}

void add_line(std::vector<std::string>& out, std::string_view text) {
  std::string line = "|";
  line += text;
  if (text.size() < kWidth) line.append(kWidth - text.size(), ' ');
  line += '|';
  out.push_back(std::move(line));
}

void add_rule(std::vector<std::string>& out, char c) {
  add_line(out, std::string(kWidth, c));
}

std::string padded(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string row(std::string_view name, const Cells& values, const Cells& ref, Formatter f) {
  // Appended, not +: GCC 12's -Wstringop-overflow misreads the temporaries under LTO.
  std::string out = " ";
  out += name;
  if (name.size() < 21) out.append(21 - name.size(), ' ');
  out += " | ";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i != 0) out += " | ";
    out += cell(*values[i], *ref[i], f);
  }
  return out + " ";
}

// The 4 statistics of a row (prefix: "allocated_bytes.all."), none when one is missing.
std::optional<Cells> cells_of(const SummaryLookup& lookup, const std::string& prefix) {
  Cells cells{};
  for (std::size_t i = 0; i < kFields.size(); ++i) {
    cells[i] = lookup(prefix + kFields[i]);
    if (cells[i] == nullptr) return std::nullopt;
  }
  return cells;
}

std::string count_text(const SummaryLookup& lookup, std::string_view name) {
  const SummaryCell* c = lookup(name);
  return c != nullptr ? c->text : "-";
}

}  // namespace

std::vector<std::string> memory_summary_lines(const SummaryLookup& lookup, int device,
                                              bool abbreviated) {
  std::vector<std::string> out;
  char buf[128];
  add_rule(out, '=');
  std::snprintf(buf, sizeof buf, "                 cudapool memory summary, device ID %-17d",
                device);
  add_line(out, buf);
  add_rule(out, '-');
  add_line(out, "            OOMs: " + padded(count_text(lookup, "num_ooms"), 12) +
                    " |       device alloc retries: " +
                    padded(count_text(lookup, "num_alloc_retries"), 8));
  add_rule(out, '=');
  add_line(out, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");

  const auto array_rows = [&](const char* member, const char* label, Formatter format) {
    const std::string name(member);
    const std::optional<Cells> all = cells_of(lookup, name + ".all.");
    if (!all) return;
    add_rule(out, '-');
    add_line(out, row(label, *all, *all, format));
    if (abbreviated) return;
    for (const auto& [pool, pool_label] : {std::pair{".large_pool.", "      from large pool"},
                                           std::pair{".small_pool.", "      from small pool"}}) {
      if (const std::optional<Cells> values = cells_of(lookup, name + pool)) {
        add_line(out, row(pool_label, *values, *all, format));
      }
    }
  };
  const auto single_row = [&](const char* member, const char* label) {
    const std::optional<Cells> values = cells_of(lookup, std::string(member) + ".");
    if (!values) return;
    add_rule(out, '-');
    add_line(out, row(label, *values, *values, format_count));
  };
  // clang-format off
#define CUDAPOOL_STAT_ARRAY(member, label, format, meaning) \
  array_rows(#member, label, format_##format);
#define CUDAPOOL_STAT_SINGLE(member, label, meaning) single_row(#member, label);
#define CUDAPOOL_STAT_COUNTER(member, combine, meaning)
#include "pool/stats.def"
#undef CUDAPOOL_STAT_ARRAY
#undef CUDAPOOL_STAT_SINGLE
#undef CUDAPOOL_STAT_COUNTER
  // clang-format on
  add_rule(out, '=');
  if (lookup("num_device_alloc") != nullptr || lookup("num_device_free") != nullptr) {
    add_line(out, " device allocs: " + count_text(lookup, "num_device_alloc") +
                      "   device frees: " + count_text(lookup, "num_device_free"));
    add_rule(out, '=');
  }
  return out;
}

std::string memory_summary(const DeviceStats& stats, int device, bool abbreviated) {
  std::map<std::string, SummaryCell, std::less<>> cells;
  for_each_stat(stats, [&](std::string_view name, std::int64_t value) {
    SummaryCell c;
    if (value >= 0) c.figure = static_cast<std::uint64_t>(value);
    c.text = std::to_string(value);
    cells.emplace(std::string(name), std::move(c));
  });
  const auto lookup = [&](std::string_view name) -> const SummaryCell* {
    const auto it = cells.find(name);
    return it == cells.end() ? nullptr : &it->second;
  };
  std::string out;
  for (const std::string& line : memory_summary_lines(lookup, device, abbreviated)) {
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace cudapool::pool
