// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_summary_cells.cpp: memory_summary_lines(), the one formatter of the
// memory_summary() table, on statistics that are not all there or not all possible (what a log
// can hold: tools/analyze/stats_table.h): rows left out, "-" for a missing count, "impossible"
// cells and the unit a pool's row then takes. The shim's full tables: test_pool_stats.cpp.
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pool/summary.h"
#include "tests/unit/catch.h"

using cudapool::pool::memory_summary_lines;
using cudapool::pool::SummaryCell;

namespace {

struct Cells {
  std::map<std::string, SummaryCell, std::less<>> map;
  void put(const std::string& name, long long v) {
    SummaryCell c;
    if (v >= 0) c.figure = static_cast<std::uint64_t>(v);
    c.text = std::to_string(v);
    map[name] = c;
  }
  void put_row(const std::string& prefix, long long a, long long b, long long c, long long d) {
    put(prefix + "current", a);
    put(prefix + "peak", b);
    put(prefix + "allocated", c);
    put(prefix + "freed", d);
  }
  std::vector<std::string> lines(int dev = 0) const {
    return memory_summary_lines(
        [this](std::string_view n) -> const SummaryCell* {
          const auto it = map.find(n);
          return it == map.end() ? nullptr : &it->second;
        },
        dev);
  }
};

}  // namespace

TEST_CASE("pool: memory_summary_lines leaves out what is missing") {
  Cells c;
  c.put_row("allocated_bytes.all.", 5 << 20, 45 << 20, 805306368, 3LL << 40);
  c.put_row("allocated_bytes.small_pool.", 512, 4608, 786431, 786432);
  c.put("allocated_bytes.large_pool.current", 1);     // 1 of 4: no row
  c.put_row("active_bytes.small_pool.", 1, 2, 3, 4);  // no row of the device: no rows
  c.put("num_device_free", 2);
  const std::vector<std::string> want = {
      "|===========================================================================|",
      "|                 cudapool memory summary, device ID 3                      |",
      "|---------------------------------------------------------------------------|",
      "|            OOMs: -            |       device alloc retries: -             |",
      "|===========================================================================|",
      "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |",
      "|---------------------------------------------------------------------------|",
      "| Allocated memory      |   5120 KiB |  46080 KiB |    768 MiB |   3072 GiB |",
      "|       from small pool |      0 KiB |      4 KiB |      0 MiB |      0 GiB |",
      "|===========================================================================|",
      "| device allocs: -   device frees: 2                                        |",
      "|===========================================================================|"};
  CHECK(c.lines(3) == want);
  Cells none;
  CHECK(none.lines().size() == 7);  // the header and the closing rule: no last line
}

TEST_CASE("pool: memory_summary_lines says impossible, a pool row then takes its own unit") {
  Cells c;
  c.put_row("reserved_bytes.all.", 20 << 20, -1, 80 << 20, 60 << 20);
  c.put_row("reserved_bytes.large_pool.", -5, 60 << 20, 80 << 20, 60 << 20);
  c.put_row("allocation.all.", -1, 900000, 5, 9);
  c.put_row("allocation.small_pool.", 800000, 800000, 1, 1);
  c.put_row("oversize_segments.", -7, -7, -7, -7);
  c.put("num_ooms", -3);
  c.put("num_alloc_retries", 9223372036854775807LL);
  c.put("num_device_alloc", -1);
  const auto lines = c.lines();
  const std::vector<std::string> want = {
      "|            OOMs: -3           |       device alloc retries: 9223372036854775807|",
      "| GPU reserved memory   |  20480 KiB | impossible |  81920 KiB |  61440 KiB |",
      "|       from large pool | impossible |  61440 KiB |  81920 KiB |  61440 KiB |",
      "| Allocations           | impossible |     900 K  |       5    |       9    |",
      "|       from small pool |     800 K  |     800 K  |       1    |       1    |",
      "| Oversize GPU segments | impossible | impossible | impossible | impossible |",
      "| device allocs: -1   device frees: -                                       |"};
  for (const std::string& w : want) {
    INFO(w);
    CHECK(std::find(lines.begin(), lines.end(), w) != lines.end());
  }
}
