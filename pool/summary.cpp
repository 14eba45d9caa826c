// pool/summary.cpp: see summary.h. Units follow memory_summary(): sizes switch to the next binary
// prefix from 768 of the current one, counts to K/M from 750 thousand; a pool's rows use the unit
// of the device-wide row above them.
#include "pool/summary.h"

#include <array>
#include <cstdio>
#include <string_view>

namespace cudapool::pool {

namespace {

constexpr int kWidth = 75;

std::string format_size(std::int64_t value, double unit_ref) {
  static constexpr std::array<const char*, 6> kPrefixes = {"B  ", "KiB", "MiB",
                                                           "GiB", "TiB", "PiB"};
  std::size_t prefix = 0;
  while (prefix + 1 < kPrefixes.size() && unit_ref >= 768 * 1024) {
    ++prefix;
    value /= 1024;
    unit_ref /= 1024;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%6lld %s", static_cast<long long>(value), kPrefixes[prefix]);
  return buf;
}

std::string format_count(std::int64_t value, double unit_ref) {
  static constexpr std::array<const char*, 3> kPrefixes = {" ", "K", "M"};
  std::size_t prefix = 0;
  while (prefix + 1 < kPrefixes.size() && unit_ref >= 750 * 1000) {
    ++prefix;
    value /= 1000;
    unit_ref /= 1000;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%7lld %s ", static_cast<long long>(value), kPrefixes[prefix]);
  return buf;
}

using Formatter = std::string (*)(std::int64_t, double);

void add_line(std::string& out, std::string_view text) {
  out += '|';
  out += text;
  for (int i = static_cast<int>(text.size()); i < kWidth; ++i) out += ' ';
  out += "|\n";
}

void add_rule(std::string& out, char c) {
  add_line(out, std::string(kWidth, c));
}

std::string row(std::string_view name, const Stat& s, const Stat& unit_ref, Formatter f) {
  char head[32];
  std::snprintf(head, sizeof head, " %-21.*s ", static_cast<int>(name.size()), name.data());
  return std::string(head) + "| " + f(s.current, static_cast<double>(unit_ref.current)) + " | " +
         f(s.peak, static_cast<double>(unit_ref.peak)) + " | " +
         f(s.allocated, static_cast<double>(unit_ref.allocated)) + " | " +
         f(s.freed, static_cast<double>(unit_ref.freed)) + " ";
}

}  // namespace

std::string memory_summary(const DeviceStats& stats, int device, bool abbreviated) {
  std::string out;
  char buf[128];
  add_rule(out, '=');
  std::snprintf(buf, sizeof buf, "                 cudapool memory summary, device ID %-17d",
                device);
  add_line(out, buf);
  add_rule(out, '-');
  std::snprintf(buf, sizeof buf, "            OOMs: %-12lld |       device alloc retries: %-8lld",
                static_cast<long long>(stats.num_ooms),
                static_cast<long long>(stats.num_alloc_retries));
  add_line(out, buf);
  add_rule(out, '=');
  add_line(out, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");

  const auto array_rows = [&](const char* label, const StatArray& array, Formatter format) {
    add_rule(out, '-');
    const Stat& all = array[static_cast<std::size_t>(StatType::kAll)];
    add_line(out, row(label, all, all, format));
    if (abbreviated) return;
    add_line(out, row("      from large pool",
                      array[static_cast<std::size_t>(StatType::kLargePool)], all, format));
    add_line(out, row("      from small pool",
                      array[static_cast<std::size_t>(StatType::kSmallPool)], all, format));
  };
  const auto single_row = [&](const char* label, const Stat& stat) {
    add_rule(out, '-');
    add_line(out, row(label, stat, stat, format_count));
  };
#define CUDAPOOL_STAT_ARRAY(member, label, format, meaning) \
  array_rows(label, stats.member, format_##format);
#define CUDAPOOL_STAT_SINGLE(member, label, meaning) single_row(label, stats.member);
#define CUDAPOOL_STAT_COUNTER(member, combine, meaning)
#include "pool/stats.def"
#undef CUDAPOOL_STAT_ARRAY
#undef CUDAPOOL_STAT_SINGLE
#undef CUDAPOOL_STAT_COUNTER
  add_rule(out, '=');
  std::snprintf(buf, sizeof buf, " device allocs: %lld   device frees: %lld",
                static_cast<long long>(stats.num_device_alloc),
                static_cast<long long>(stats.num_device_free));
  add_line(out, buf);
  add_rule(out, '=');
  return out;
}

}  // namespace cudapool::pool
