// SPDX-License-Identifier: Apache-2.0
// tools/tune/sweep.cpp: see sweep.h.
#include "tools/tune/sweep.h"

#include <cstdio>
#include <set>

#include "config/parse.h"

namespace cudapool::tune {

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

std::string fraction_text(double f) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", f);
  return buf;
}

}  // namespace

std::vector<std::uint64_t> split_limits(std::uint64_t largest_request) {
  // A limit at or above the largest request changes nothing (no block that large is asked for).
  std::vector<std::uint64_t> out;
  for (std::uint64_t mb : {20ull, 32ull, 64ull, 128ull, 256ull, 512ull, 1024ull, 2048ull, 4096ull,
                           8192ull, 16384ull}) {
    if (mb * kMiB < largest_request) out.push_back(mb);
  }
  return out;
}

std::vector<Candidate> sweep(const SweepInputs& in) {
  std::vector<Candidate> out;
  std::set<std::string> seen;
  const std::string fraction =
      in.fraction ? "per_process_memory_fraction:" + fraction_text(*in.fraction) : "";
  auto add = [&](std::string label, std::string changes, bool user = false) {
    std::string conf = in.base_conf;
    std::string all = changes;
    // The fraction applies to every candidate (what the user runs under).
    if (!fraction.empty()) all = all.empty() ? fraction : fraction + "," + all;
    if (!all.empty()) conf = conf.empty() ? all : conf + "," + all;
    if (!seen.insert(conf).second) return;
    out.push_back(Candidate{std::move(label), std::move(changes), std::move(conf), user});
  };

  add("own", "");
  if (!in.base_conf.empty()) {
    // The defaults, as if no string had been set (but under the same fraction).
    Candidate d{"defaults", "", fraction, false};
    if (seen.insert(d.conf).second) out.push_back(d);
  }
  add("expandable_segments:True", "expandable_segments:True");
  const std::vector<std::uint64_t> limits = split_limits(in.largest_request);
  for (std::uint64_t mb : limits) {
    const std::string pair = "max_split_size_mb:" + std::to_string(mb);
    add(pair, pair);
  }
  for (int d : {2, 4, 8, 16}) {
    const std::string pair = "roundup_power2_divisions:" + std::to_string(d);
    add(pair, pair);
  }
  for (const char* list : {"[256:1,512:2,1024:4,>:8]", "[64:8,256:4,1024:2,>:1]", "[>:4]"}) {
    const std::string pair = std::string("roundup_power2_divisions:") + list;
    add(pair, pair);
  }
  for (int mb : {32, 64, 128}) {
    const std::string pair = "large_segment_size_mb:" + std::to_string(mb);
    add(pair, pair);
  }
  // max_non_split_rounding_mb only matters for requests at or above the split limit.
  for (std::uint64_t mb : limits) {
    if (mb != 128 && mb != 512) continue;
    for (int r : {64, 256, 1024}) {
      const std::string pair = "max_split_size_mb:" + std::to_string(mb) +
                               ",max_non_split_rounding_mb:" + std::to_string(r);
      add(pair, pair);
    }
  }
  // Combinations.
  for (int d : {4, 8}) {
    const std::string pair =
        "expandable_segments:True,roundup_power2_divisions:" + std::to_string(d);
    add(pair, pair);
  }
  add("expandable_segments:True,large_segment_size_mb:64",
      "expandable_segments:True,large_segment_size_mb:64");
  for (std::uint64_t mb : limits) {
    if (mb != 128 && mb != 512) continue;
    const std::string pair =
        "max_split_size_mb:" + std::to_string(mb) + ",roundup_power2_divisions:4";
    add(pair, pair);
  }
  if (in.fraction) {
    for (const char* t : {"0.6", "0.8", "0.95"}) {
      const std::string pair = std::string("garbage_collection_threshold:") + t;
      add(pair, pair);
      if (!limits.empty()) {
        const std::string with_split =
            pair +
            ",max_split_size_mb:" + std::to_string(limits.size() > 3 ? limits[3] : limits.back());
        add(with_split, with_split);
      }
    }
  }
  for (const std::string& t : in.tries) add(t, t, true);
  return out;
}

std::vector<Candidate> sweep_up_to(const SweepInputs& in, std::uint64_t bound) {
  // split_limits() changes only where the largest request passes one of its values: one sweep
  // for each range (no split limit, 20 MiB, 20 and 32 MiB, ...).
  std::vector<std::uint64_t> largest{0};
  for (std::uint64_t mb : split_limits(bound)) largest.push_back(mb * kMiB + 1);
  std::vector<Candidate> out;
  std::set<std::string> seen;
  for (std::uint64_t x : largest) {
    SweepInputs one = in;
    one.largest_request = x;
    for (Candidate& c : sweep(one)) {
      if (seen.insert(c.conf).second) out.push_back(std::move(c));
    }
  }
  return out;
}

void set_base(SweepInputs* in, const std::string& own_conf) {
  in->base_conf = own_conf;
  const config::ParseResult own = config::parse_conf(own_conf);
  if (!in->fraction && own.options.per_process_memory_fraction < 1.0) {
    in->fraction = own.options.per_process_memory_fraction;
  }
}

}  // namespace cudapool::tune
