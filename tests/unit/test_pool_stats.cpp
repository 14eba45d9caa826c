// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_stats.cpp: every statistic of memory_stats() after a scenario computed by
// hand, and the memory_summary() table (rows, widths, unit switching).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "pool/summary.h"
#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using namespace pooltest;
using cudapool::pool::DeviceStats;
using cudapool::pool::memory_summary;
using cudapool::pool::Stat;

namespace {

using StatMap = std::map<std::string, std::int64_t>;
struct Quad {
  std::int64_t current, peak, allocated, freed;
};

void put(StatMap& m, const std::string& prefix, const Quad& q) {
  m[prefix + ".current"] = q.current;
  m[prefix + ".peak"] = q.peak;
  m[prefix + ".allocated"] = q.allocated;
  m[prefix + ".freed"] = q.freed;
}

void put_array(StatMap& m, const std::string& name, const Quad& all, const Quad& small,
               const Quad& large) {
  put(m, name + ".all", all);
  put(m, name + ".small_pool", small);
  put(m, name + ".large_pool", large);
}

void check_stats(const StatMap& actual, const StatMap& expected) {
  CHECK(actual.size() == expected.size());
  for (const auto& [name, value] : expected) {
    INFO(name);
    const auto it = actual.find(name);
    REQUIRE(it != actual.end());
    CHECK(it->second == value);
  }
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool has_line(const std::vector<std::string>& lines, const std::string& line) {
  for (const std::string& l : lines) {
    if (l == line) return true;
  }
  return false;
}

void set(Stat& s, std::int64_t current, std::int64_t peak, std::int64_t allocated,
         std::int64_t freed) {
  s.current = current;
  s.peak = peak;
  s.allocated = allocated;
  s.freed = freed;
}

constexpr std::int64_t M = 1048576;

}  // namespace

TEST_CASE("pool: every memory_stats value after a hand-computed scenario") {
  Harness h(kGiB, with_max_split(32 * kMiB));
  const std::uintptr_t s1 = h.alloc(1000);       // 1024, a new 2 MiB small segment, split
  h.alloc(3000);                                 // 3072 from the small remainder
  const std::uintptr_t l1 = h.alloc(5 * kMiB);   // a new 20 MiB segment, 15 MiB split off
  const std::uintptr_t o1 = h.alloc(40 * kMiB);  // oversize: a 40 MiB segment, not split
  h.free(s1);
  h.free(o1);
  h.free(l1);       // merges back to a whole 20 MiB segment
  h.empty_cache();  // frees the 20 and 40 MiB segments
  CHECK(h.try_alloc(2 * kGiB).status == AllocStatus::kOutOfMemory);

  StatMap e;
  put_array(e, "allocation", {1, 4, 4, 3}, {1, 2, 2, 1}, {0, 2, 2, 2});
  put_array(e, "active", {1, 4, 4, 3}, {1, 2, 2, 1}, {0, 2, 2, 2});
  const Quad all_bytes{3072, 45 * M + 4096, 45 * M + 4096, 45 * M + 1024};
  const Quad small_bytes{3072, 4096, 4096, 1024};
  const Quad large_bytes{0, 45 * M, 45 * M, 45 * M};
  put_array(e, "allocated_bytes", all_bytes, small_bytes, large_bytes);
  put_array(e, "active_bytes", all_bytes, small_bytes, large_bytes);
  put_array(e, "requested_bytes", {3000, 45 * M + 4000, 45 * M + 4000, 45 * M + 1000},
            {3000, 4000, 4000, 1000}, {0, 45 * M, 45 * M, 45 * M});
  put_array(e, "reserved_bytes", {2 * M, 62 * M, 62 * M, 60 * M}, {2 * M, 2 * M, 2 * M, 0},
            {0, 60 * M, 60 * M, 60 * M});
  put_array(e, "segment", {1, 3, 3, 2}, {1, 1, 1, 0}, {0, 2, 2, 2});
  put_array(e, "inactive_split", {2, 3, 3, 1}, {2, 2, 2, 0}, {0, 1, 1, 1});
  // small: +(2 MiB - 1024), -3072, +1024; large: +15 MiB, -15 MiB.
  put_array(e, "inactive_split_bytes",
            {2 * M - 4096 + 1024, 2 * M - 4096 + 1024 + 15 * M, 2 * M + 15 * M, 15 * M + 3072},
            {2 * M - 3072, 2 * M - 1024, 2 * M, 3072}, {0, 15 * M, 15 * M, 15 * M});
  put(e, "oversize_allocations", {0, 1, 1, 1});
  put(e, "oversize_segments", {0, 1, 1, 1});
  e["max_split_size"] = 32 * M;
  e["num_alloc_retries"] = 1;
  e["num_device_alloc"] = 3;
  e["num_device_free"] = 2;
  e["num_ooms"] = 1;
  e["num_sync_all_streams"] = 2;
  CHECK(e.size() == 122);
  check_stats(stat_map(h.pool), e);
}

TEST_CASE("pool: memory_stats names come in sorted order and max_split_size is -1 unlimited") {
  Harness h(kGiB);
  std::vector<std::string> names;
  cudapool::pool::for_each_stat(
      h.stats(), [&](std::string_view name, std::int64_t) { names.emplace_back(name); });
  CHECK(names.size() == 122);
  CHECK(std::is_sorted(names.begin(), names.end()));
  CHECK(names.front() == "active.all.allocated");
  CHECK(names.back() == "segment.small_pool.peak");
  CHECK(h.stat("max_split_size") == -1);
  CHECK(h.stat("allocated_bytes.all.peak") == 0);

  // Peaks stay after a free; requested bytes are the unrounded sizes.
  const std::uintptr_t a = h.alloc(1);
  const std::uintptr_t b = h.alloc(kMiB + 1);
  CHECK(h.stat("requested_bytes.all.current") == 1 + static_cast<std::int64_t>(kMiB) + 1);
  CHECK(h.stat("allocated_bytes.all.current") == 512 + static_cast<std::int64_t>(kMiB) + 512);
  h.free(b);
  CHECK(h.stat("allocated_bytes.all.peak") == 512 + static_cast<std::int64_t>(kMiB) + 512);
  CHECK(h.stat("allocated_bytes.large_pool.current") == 0);
  CHECK(h.stat("reserved_bytes.large_pool.current") == 20 * M);
  CHECK(h.stat("segment.small_pool.allocated") == 1);
  CHECK(h.stat("oversize_allocations.allocated") == 0);
  CHECK(h.stat("oversize_segments.peak") == 0);
  h.free(a);

  Harness s(kGiB, with_max_split(21 * kMiB));
  CHECK(s.stat("max_split_size") == 21 * M);
}

TEST_CASE("pool: memory_summary has PyTorch's rows and switches units like PyTorch") {
  DeviceStats st;
  const std::int64_t K = 1024, G = M * 1024, T = G * 1024;
  set(st.allocated_bytes[0], 786432, 2 * G, 5 * T, 0);
  set(st.allocated_bytes[2], M, 0, 0, 0);
  set(st.allocated_bytes[1], 785408, 0, 0, 0);
  set(st.active_bytes[0], 785408, 0, 0, 0);
  set(st.reserved_bytes[0], 6 * T * 1024, 1023, 768 * K - 1, 768 * K);
  set(st.inactive_split_bytes[0], T * 1024 * 1024, 0, 0, 0);
  set(st.allocation[0], 750000, 749999, 2000000000, 0);
  set(st.allocation[1], 1000, 0, 0, 0);
  set(st.oversize_allocations, 1, 2, 3, 4);
  st.num_ooms = 3;
  st.num_alloc_retries = 17;
  st.num_device_alloc = 5;
  st.num_device_free = 6;

  const std::string text = memory_summary(st, 2);
  const auto lines = lines_of(text);
  for (const std::string& l : lines) {
    INFO(l);
    CHECK(l.size() == 77);
    CHECK(l.front() == '|');
    CHECK(l.back() == '|');
  }
  // 9 metrics of 3 rows each (all, large pool, small pool) and the 2 oversize rows.
  const auto rows = [](const std::vector<std::string>& ls) {
    return std::count_if(ls.begin(), ls.end(), [](const std::string& l) {
      return l.size() > 25 && l[0] == '|' && l[1] == ' ' && l[24] == '|' &&
             l.find("Metric") == std::string::npos;
    });
  };
  CHECK(rows(lines) == 29);
  CHECK(lines[0] == "|" + std::string(75, '=') + "|");
  CHECK(lines[1].find("device ID 2 ") != std::string::npos);
  CHECK(lines[3].find("OOMs: 3 ") != std::string::npos);
  CHECK(lines[3].find("retries: 17 ") != std::string::npos);
  CHECK(lines[5] ==
        "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |");
  // Sizes switch prefix from 768 of the current unit; pool rows use the unit of the "all" row.
  CHECK(has_line(lines,
                 "| Allocated memory      |    768 KiB |   2048 MiB |   5120 GiB |      0 B   |"));
  CHECK(has_line(lines,
                 "|       from large pool |   1024 KiB |      0 MiB |      0 GiB |      0 B   |"));
  CHECK(has_line(lines,
                 "|       from small pool |    767 KiB |      0 MiB |      0 GiB |      0 B   |"));
  CHECK(has_line(lines,
                 "| Active memory         | 785408 B   |      0 B   |      0 B   |      0 B   |"));
  CHECK(has_line(lines,
                 "| GPU reserved memory   |   6144 TiB |   1023 B   | 786431 B   |    768 KiB |"));
  CHECK(has_line(lines,
                 "| Non-releasable memory |   1024 PiB |      0 B   |      0 B   |      0 B   |"));
  // Counts switch from 750 thousand.
  CHECK(has_line(lines,
                 "| Allocations           |     750 K  |  749999    |    2000 M  |       0    |"));
  CHECK(has_line(lines,
                 "|       from small pool |       1 K  |       0    |       0 M  |       0    |"));
  CHECK(has_line(lines,
                 "| Oversize allocations  |       1    |       2    |       3    |       4    |"));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].rfind("| Oversize allocations", 0) == 0) {
      REQUIRE(i > 0);
      CHECK(lines[i - 1] == "|" + std::string(75, '-') + "|");
    }
  }
  for (const char* name :
       {"Allocated memory", "Active memory", "Requested memory", "GPU reserved memory",
        "Non-releasable memory", "Allocations", "Active allocs", "GPU reserved segments",
        "Non-releasable allocs", "Oversize allocations", "Oversize GPU segments"}) {
    INFO(name);
    CHECK(text.find(std::string("| ") + name) != std::string::npos);
  }
  CHECK(text.find("device allocs: 5   device frees: 6") != std::string::npos);

  const std::string brief = memory_summary(st, 0, /*abbreviated=*/true);
  CHECK(brief.find("from large pool") == std::string::npos);
  CHECK(brief.find("from small pool") == std::string::npos);
  CHECK(rows(lines_of(brief)) == 11);
  CHECK(brief.find("| Allocated memory      |    768 KiB |") != std::string::npos);
}

TEST_CASE("pool: memory_summary of a live pool shows its statistics") {
  Harness h(kGiB);
  h.alloc(12 * kMiB);
  h.alloc(1000);
  const auto lines = lines_of(memory_summary(h.stats(), 0));
  CHECK(has_line(lines,
                 "| Allocated memory      |  12289 KiB |  12289 KiB |  12289 KiB |      0 B   |"));
  CHECK(has_line(lines,
                 "| GPU reserved memory   |  14336 KiB |  14336 KiB |  14336 KiB |      0 B   |"));
  CHECK(has_line(lines,
                 "|       from small pool |   2048 KiB |   2048 KiB |   2048 KiB |      0 B   |"));
  CHECK(has_line(lines,
                 "| GPU reserved segments |       2    |       2    |       2    |       0    |"));
}

TEST_CASE("pool: add_pool_stats sums two pools of one device, every statistic") {
  DeviceStats a;
  DeviceStats b;
  a.allocated_bytes[0] = Stat{10, 30, 50, 40};
  b.allocated_bytes[0] = Stat{1, 2, 3, 2};
  a.reserved_bytes[2] = Stat{100, 100, 100, 0};
  b.reserved_bytes[2] = Stat{20, 40, 60, 40};
  a.num_ooms = 1;
  b.num_ooms = 2;
  b.num_device_alloc = 7;
  b.oversize_segments = Stat{1, 1, 1, 0};
  a.max_split_size = -1;
  b.max_split_size = 5;
  cudapool::pool::add_pool_stats(a, b);
  CHECK(a.allocated_bytes[0].current == 11);
  CHECK(a.allocated_bytes[0].peak == 32);  // an upper bound: the sum of the peaks
  CHECK(a.allocated_bytes[0].allocated == 53);
  CHECK(a.allocated_bytes[0].freed == 42);
  CHECK(a.reserved_bytes[2].current == 120);
  CHECK(a.reserved_bytes[2].peak == 140);
  CHECK(a.num_ooms == 3);
  CHECK(a.num_device_alloc == 7);
  CHECK(a.oversize_segments.current == 1);
  CHECK(a.max_split_size == -1);  // kept
  // Every named statistic of the sum is the sum of the named statistics (max_split_size aside),
  // for the statistics of a pool that went through allocations, frees, an OOM and empty_cache.
  Harness h(kGiB, with_max_split(32 * kMiB));
  const std::uintptr_t s1 = h.alloc(1000);
  h.alloc(3000);
  h.alloc(40 * kMiB);
  h.free(s1);
  h.empty_cache();
  CHECK(h.try_alloc(2 * kGiB).status == AllocStatus::kOutOfMemory);
  const DeviceStats c = h.pool.stats();
  DeviceStats sum = c;
  cudapool::pool::add_pool_stats(sum, c);
  std::map<std::string, std::int64_t> one, two;
  cudapool::pool::for_each_stat(
      c, [&](std::string_view n, std::int64_t v) { one[std::string(n)] = v; });
  cudapool::pool::for_each_stat(
      sum, [&](std::string_view n, std::int64_t v) { two[std::string(n)] = v; });
  for (const auto& [name, value] : one) {
    if (name == "max_split_size") continue;
    CHECK(two[name] == 2 * value);
  }
}
