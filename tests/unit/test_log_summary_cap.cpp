// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_log_summary_cap.cpp: the summary line's leak list is capped (log/format.h,
// kMaxSummaryLeaks, kMaxSummaryLine): at most 4096 blocks, fewer when the line would pass 16 MiB,
// the first ones in the order given, and "leaks_omitted" with the count and the bytes of those left
// out. Without the cap a process with tens of thousands of blocks alive at exit (issue 26, item 7)
// wrote a line over the readers' 64 MiB limit. Not here: the rest of the line
// (test_log_format.cpp).
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "log/format.h"
#include "tests/unit/catch.h"

using cudapool::log::format_summary;
using cudapool::log::kMaxSummaryLeaks;
using cudapool::log::kMaxSummaryLine;
using cudapool::log::Leak;
using cudapool::log::Summary;
using nlohmann::json;

namespace {

Summary with_leaks(std::size_t n, std::size_t frames, std::size_t symbol_bytes) {
  Summary s;
  s.seq = 2 * n + 2;
  s.t_ns = 1;
  s.events = 2 * n + 1;
  s.devices.emplace_back(0, cudapool::pool::DeviceStats{});
  s.leaks.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    Leak l;
    l.dev = static_cast<int>(i % 2);
    l.ptr = 0x7f0000000000ull + 4096 * i;
    l.size = 1000 + i;
    l.block_size = 1024 + 512 * i;
    l.seq = i + 1;
    l.t_ns = 10 * i;
    l.tid = 7;
    for (std::size_t k = 0; k < frames; ++k) {
      l.symbols.push_back("0x7f33aa0101c0 /usr/lib/x86_64-linux-gnu/libsomething.so(" +
                          std::string(symbol_bytes, 'f') + "+0x1c)");
    }
    s.leaks.push_back(std::move(l));
  }
  return s;
}

// The sums over leaks [from, to).
struct Sums {
  std::uint64_t count = 0, size = 0, block_size = 0;
};
Sums sums(const Summary& s, std::size_t from) {
  Sums out;
  for (std::size_t i = from; i < s.leaks.size(); ++i) {
    ++out.count;
    out.size += s.leaks[i].size;
    out.block_size += s.leaks[i].block_size;
  }
  return out;
}

}  // namespace

TEST_CASE("summary cap: more blocks than 4096: the first 4096 listed and the rest counted") {
  const Summary s = with_leaks(10000, 0, 0);
  const std::string line = format_summary(s);
  CHECK(line.size() <= kMaxSummaryLine);
  const json j = json::parse(line);
  const json& leaks = j.at("leaks");
  REQUIRE(leaks.size() == kMaxSummaryLeaks);
  for (std::size_t i = 0; i < leaks.size(); ++i) {
    if (leaks[i].at("seq") != i + 1) FAIL("leak " << i << " is not the " << i + 1 << "th given");
  }
  const Sums rest = sums(s, kMaxSummaryLeaks);
  REQUIRE(j.contains("leaks_omitted"));
  CHECK(j.at("leaks_omitted") ==
        json({{"count", rest.count}, {"size", rest.size}, {"block_size", rest.block_size}}));
  CHECK(j.at("log_errors").at("records_lost") == 0);  // the fields after it are still there
}

TEST_CASE("summary cap: long backtraces stop the list before the line passes 16 MiB") {
  // 5000 blocks with 16 frames of about 700 bytes: about 56 MiB of leaks uncapped.
  const Summary s = with_leaks(5000, 16, 640);
  const std::string line = format_summary(s);
  CHECK(line.size() <= kMaxSummaryLine);
  const json j = json::parse(line);
  const std::size_t listed = j.at("leaks").size();
  CHECK(listed > 1000);
  CHECK(listed < kMaxSummaryLeaks);
  CHECK(j.at("leaks").back().at("seq") == listed);
  CHECK(j.at("leaks").back().at("backtrace").size() == 16);
  const Sums rest = sums(s, listed);
  CHECK(j.at("leaks_omitted") ==
        json({{"count", rest.count}, {"size", rest.size}, {"block_size", rest.block_size}}));
}

TEST_CASE("summary cap: 4096 blocks or fewer: all listed and no leaks_omitted") {
  const Summary s = with_leaks(kMaxSummaryLeaks, 2, 10);
  const json j = json::parse(format_summary(s));
  CHECK(j.at("leaks").size() == kMaxSummaryLeaks);
  CHECK(!j.contains("leaks_omitted"));
  CHECK(!json::parse(format_summary(with_leaks(0, 0, 0))).contains("leaks_omitted"));
}
