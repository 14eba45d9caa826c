// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_tune_shadows.cpp: split limits watched beside a replay (pool/split_shadows.h,
// tools/tune/shadows.h): on random logs of a small device (out-of-memory retries, oversize blocks
// released, blocks behind reuse fences), a watched setting that never parts has exactly the
// statistics of its own replay, and tune's figures are the same with the watch on and off. Not
// here: settings grouped by the sizes asked for (test_tune_same_replay.cpp).
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "config/parse.h"
#include "tests/unit/catch.h"
#include "tests/unit/tune_test_util.h"
#include "tools/tune/shadows.h"
#include "tools/tune/tune.h"

using namespace cudapool;
using namespace cudapool::tune;

namespace {

const std::vector<std::string> kConfs = {
    "",
    "max_split_size_mb:20",
    "max_split_size_mb:24",
    "max_split_size_mb:31",
    "max_split_size_mb:40",
    "max_split_size_mb:48",
    "max_split_size_mb:64",
    "max_split_size_mb:100",
    "max_split_size_mb:160",
    "max_split_size_mb:20,max_non_split_rounding_mb:1",
    "max_split_size_mb:20,max_non_split_rounding_mb:40",
    "max_split_size_mb:20,max_non_split_rounding_mb:160",
    "max_split_size_mb:20,max_non_split_rounding_mb:320",
    "max_split_size_mb:40,max_non_split_rounding_mb:100",
};

// Every statistic of every device of a replay but those that name the split limit itself (the
// limit, and the counts of blocks at or above it: no decision reads them).
std::map<std::string, std::int64_t> statistics(const replay::Replayer& r) {
  std::map<std::string, std::int64_t> out;
  for (const int dev : r.devices()) {
    pool::for_each_stat(r.stats(dev), [&](std::string_view name, std::int64_t value) {
      if (name.find("oversize") == std::string_view::npos && name != "max_split_size")
        out[std::to_string(dev) + ":" + std::string(name)] = value;
    });
  }
  return out;
}

replay::ReplaySettings settings_of(const std::string& conf,
                                   const std::vector<pool::SplitLimits>& shadows = {}) {
  replay::ReplaySettings s;
  s.conf = conf;
  s.shadows = shadows;
  return s;
}

std::map<std::string, std::int64_t> replayed(const std::string& text, const std::string& conf) {
  replay::Replayer r(settings_of(conf));
  std::istringstream in(text);
  r.feed_stream(in);
  return statistics(r);
}

LogInput input(const std::string& text) {
  LogInput in;
  in.path = "random";
  in.open = [text](std::string*) { return in_memory(text); };
  in.rereadable = true;
  return in;
}

}  // namespace

TEST_CASE("split shadows: a watched limit that never parts has the statistics of its own replay") {
  std::vector<pool::SplitLimits> limits;
  for (const std::string& conf : kConfs) {
    limits.push_back(pool::SplitLimits::of(config::parse_conf(conf).options));
  }
  std::mt19937_64 rng(11);
  std::size_t stayed = 0, parted = 0;
  for (int round = 0; round < 6; ++round) {
    const std::uint64_t device = (round % 2 == 0 ? 2048 : 600) * tunetest::kMiB;
    const std::string text = tunetest::random_log(rng, device, 3000, round >= 2);
    std::vector<std::map<std::string, std::int64_t>> own;
    for (const std::string& conf : kConfs) own.push_back(replayed(text, conf));
    for (std::size_t k = 0; k < kConfs.size(); ++k) {
      replay::Replayer r(settings_of(kConfs[k], limits));
      std::istringstream in(text);
      r.feed_stream(in);
      CHECK(statistics(r) == own[k]);  // watching changes nothing
      for (std::size_t w = 0; w < kConfs.size(); ++w) {
        if (w == k) {
          CHECK((r.parted() >> w & 1) == 0);
          continue;
        }
        if ((r.parted() >> w & 1) != 0) {
          ++parted;
          continue;
        }
        ++stayed;
        INFO("round " << round << ": '" << kConfs[w] << "' watched beside '" << kConfs[k] << "'");
        CHECK(own[w] == own[k]);
      }
    }
  }
  // Both kinds occur: the test is not empty either way.
  CHECK(stayed >= 20);
  CHECK(parted >= 100);
}

TEST_CASE("split shadows: groups are the settings equal but for the two split limits") {
  const std::vector<ShadowGroup> groups =
      split_groups({"", "max_split_size_mb:20", "expandable_segments:True",
                    "max_split_size_mb:20,"
                    "max_non_split_rounding_mb:40",
                    "expandable_segments:True,max_split_size_mb:64", "roundup_power2_divisions:4"});
  REQUIRE(groups.size() == 3);
  CHECK(groups[0].replayed == 0);
  CHECK(groups[0].watched == std::vector<std::size_t>{1, 3});
  CHECK(groups[1].replayed == 2);
  CHECK(groups[1].watched == std::vector<std::size_t>{4});
  CHECK(groups[2].replayed == 5);
  CHECK(groups[2].watched.empty());
  // At most kMax watched beside one replay.
  std::vector<std::string> many;
  for (std::size_t mb = 20; mb < 20 + 2 * pool::SplitShadows::kMax + 5; ++mb) {
    many.push_back("max_split_size_mb:" + std::to_string(mb));
  }
  const std::vector<ShadowGroup> split = split_groups(many);
  REQUIRE(split.size() == 3);
  CHECK(split[0].watched.size() == pool::SplitShadows::kMax);
  CHECK(split[1].replayed == pool::SplitShadows::kMax + 1);
  CHECK(split[2].watched.size() == 2);
}

TEST_CASE("tune: the figures are the same with split limits watched and each replayed") {
  SweepInputs in;
  for (const std::string& conf : kConfs) {
    if (!conf.empty()) in.tries.push_back(conf);
  }
  std::mt19937_64 rng(5);
  std::size_t saved = 0;
  for (int round = 0; round < 4; ++round) {
    const std::uint64_t device = (round % 2 == 0 ? 2048 : 600) * tunetest::kMiB;
    const std::string text = tunetest::random_log(rng, device, 3000, round >= 1);
    for (const std::size_t look : {std::size_t{100}, kFirstLookEvents}) {
      INFO("round " << round << ", first look " << look);
      TuneOptions on, off;
      on.first_look_events = off.first_look_events = look;
      off.watch_split_limits = false;
      TuneResult watched, each;
      std::string error;
      REQUIRE(run_tune({input(text)}, in, on, &watched, &error));
      REQUIRE(run_tune({input(text)}, in, off, &each, &error));
      REQUIRE(watched.candidates.size() == each.candidates.size());
      for (std::size_t c = 0; c < each.candidates.size(); ++c)
        CHECK(watched.candidates[c].conf == each.candidates[c].conf);
      CHECK(watched.outcomes == each.outcomes);
      CHECK(watched.recommendation.conf == each.recommendation.conf);
      CHECK(watched.replayed <= each.replayed);
      saved += each.replayed - watched.replayed;
    }
  }
  CHECK(saved > 0);
}

namespace {

constexpr std::size_t kMiB = tunetest::kMiB;

pool::SplitLimits limits_of(const std::string& conf) {
  return pool::SplitLimits::of(config::parse_conf(conf).options);
}

// A pool of `conf` on a device of `device` bytes watching `watched`.
struct Watched {
  Watched(const std::string& conf, std::size_t device, const std::vector<std::string>& watched)
      : backend(device), pool(config::parse_conf(conf).options, backend) {
    for (const std::string& w : watched) shadows.add(limits_of(w));
    pool.watch(&shadows);
  }
  pool::SimulatedBackend backend;
  pool::DevicePool pool;
  pool::SplitShadows shadows;
};

}  // namespace

TEST_CASE("split shadows: each decision that reads a split limit parts the limits it tells apart") {
  SECTION("a cached block taken by one limit, refused by the other") {
    Watched w("", 1024 * kMiB, {"max_split_size_mb:40", "max_split_size_mb:200"});
    w.pool.free(w.pool.malloc(100 * kMiB).ptr);
    CHECK(w.shadows.parted() == 0);
    // Below the own (unlimited) limit: the 100 MiB block serves 50 MiB; above 40 MiB it is an
    // oversize request, and the block is more than max_non_split_rounding (20 MiB) larger.
    w.pool.malloc(50 * kMiB);
    CHECK(w.shadows.parted() == 0b01);
  }
  SECTION("a block split under one limit, taken whole under the other") {
    Watched w("max_split_size_mb:64", 1024 * kMiB,
              {"max_split_size_mb:40", "max_split_size_mb:48,max_non_split_rounding_mb:1",
               "max_split_size_mb:100"});
    w.pool.free(w.pool.malloc(62 * kMiB).ptr);
    w.pool.malloc(47 * kMiB);  // the 62 MiB block, 15 MiB left: split below 64 MiB, not below 40
    CHECK(w.shadows.parted() == 0b011);  // 48 MiB with a rounding of 1 MiB refuses the block
  }
  SECTION("oversize blocks released after an out-of-memory, searched from the limit") {
    Watched w("max_split_size_mb:64", 200 * kMiB,
              {"max_split_size_mb:64,max_non_split_rounding_mb:50", "max_split_size_mb:48"});
    w.pool.free(w.pool.malloc(100 * kMiB).ptr);
    CHECK(w.shadows.parted() == 0);
    w.pool.malloc(150 * kMiB);  // no room beside the cached 100 MiB: the release step runs
    CHECK(w.shadows.parted() == 0b10);
  }
}
