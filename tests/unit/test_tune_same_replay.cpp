// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_tune_same_replay.cpp: tune's settings that replay alike (tools/tune/
// same_replay.h): which roundings and split limits fall together on given sizes, and, on random
// logs of a small device (out-of-memory retries, oversize blocks released), that every setting
// grouped with another has exactly that one's replay. Not here: the pass (test_tune_pass.cpp).
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "tests/unit/tune_test_util.h"
#include "tools/replay/recorded_log.h"
#include "tools/tune/first_look.h"
#include "tools/tune/same_replay.h"

using namespace cudapool;
using namespace cudapool::tune;

namespace {

using tunetest::kMiB;

std::vector<std::uint64_t> sizes_of(const std::string& text) {
  std::istringstream in(text);
  replay::EventBatch batch;
  batch.events = replay::read_log(in).events;
  RequestSizes requests;
  requests.add(batch);
  REQUIRE(requests.known);
  return {requests.sizes.begin(), requests.sizes.end()};
}

}  // namespace

TEST_CASE("same replay: roundings that give every size the same block fall together") {
  const std::vector<std::string> confs = {"", "roundup_power2_divisions:4",
                                          "roundup_power2_divisions:[>:4]",
                                          "roundup_power2_divisions:8", "large_segment_size_mb:64"};
  // Powers of two and small sizes: no division changes them.
  CHECK(replayed_as(confs, {1000, 4 * kMiB, 64 * kMiB}) == std::vector<std::size_t>{0, 0, 0, 0, 4});
  // 50 MiB: 4 and [>:4] divisions give 56 MiB, 8 give 52 MiB, none 50 MiB.
  CHECK(replayed_as(confs, {1000, 50 * kMiB}) == std::vector<std::size_t>{0, 1, 1, 3, 4});
  // No sizes known for nothing: every setting alone.
  CHECK(replayed_as({"", "max_split_size_mb:20"}, {}) == std::vector<std::size_t>{0, 0});
}

TEST_CASE("same replay: split limits that no request and no segment lies between fall together") {
  const std::vector<std::string> confs = {"max_split_size_mb:20",
                                          "max_split_size_mb:24",
                                          "max_split_size_mb:32",
                                          "",
                                          "expandable_segments:True,max_split_size_mb:20",
                                          "expandable_segments:True,max_split_size_mb:24"};
  // 30 MiB asked for (a segment of 30 MiB): 20 and 24 are below it, 32 and no limit above.
  CHECK(replayed_as(confs, {30 * kMiB}) == std::vector<std::size_t>{0, 0, 2, 2, 4, 5});
  // 29 MiB + 1 (a block of 29 MiB + 512, a segment of 30 MiB): three classes, below both, between
  // them (the segment is oversize, the request not), above both.
  CHECK(replayed_as({"max_split_size_mb:29", "max_split_size_mb:30", "max_split_size_mb:31",
                     "max_split_size_mb:32"},
                    {29 * kMiB + 1}) == std::vector<std::size_t>{0, 1, 2, 2});
  // 5 MiB: its segment is large_segment_size (20 MiB): a limit of 20 MiB is at it, 21 above.
  CHECK(replayed_as({"max_split_size_mb:20", "max_split_size_mb:21", ""}, {5 * kMiB}) ==
        std::vector<std::size_t>{0, 1, 1});
}

TEST_CASE("same replay: a setting grouped with another replays exactly as that one") {
  const std::vector<std::string> confs = {
      "",
      "roundup_power2_divisions:2",
      "roundup_power2_divisions:4",
      "roundup_power2_divisions:[>:1]",
      "roundup_power2_divisions:[256:4,>:1]",
      "max_split_size_mb:20",
      "max_split_size_mb:22",
      "max_split_size_mb:23",
      "max_split_size_mb:24",
      "max_split_size_mb:29",
      "max_split_size_mb:30",
      "max_split_size_mb:31",
      "max_split_size_mb:46",
      "max_split_size_mb:48",
      "max_split_size_mb:62",
      "max_split_size_mb:64",
      "max_split_size_mb:100",
      "max_split_size_mb:101",
      "max_split_size_mb:151",
      "max_split_size_mb:20,roundup_power2_divisions:2",
      "max_split_size_mb:22,roundup_power2_divisions:[>:1]",
      "max_split_size_mb:64,max_non_split_rounding_mb:40",
      "max_split_size_mb:48,max_non_split_rounding_mb:40",
      "large_segment_size_mb:32",
      "large_segment_size_mb:32,max_split_size_mb:22",
      "large_segment_size_mb:32,max_split_size_mb:31",
      "large_segment_size_mb:32,max_split_size_mb:33",
      "expandable_segments:True",
      "expandable_segments:True,roundup_power2_divisions:2",
      "expandable_segments:True,max_split_size_mb:20",
      "per_process_memory_fraction:0.5,garbage_collection_threshold:0.6,max_split_size_mb:20",
      "per_process_memory_fraction:0.5,garbage_collection_threshold:0.6,max_split_size_mb:22",
  };
  std::mt19937_64 rng(7);
  std::size_t grouped = 0;
  for (int round = 0; round < 6; ++round) {
    const std::string text = tunetest::random_log(rng, (round % 2 == 0 ? 2048 : 600) * kMiB, 3000);

    const std::vector<std::size_t> as = replayed_as(confs, sizes_of(text));
    std::vector<Outcome> outcomes;
    for (const std::string& conf : confs) outcomes.push_back(tunetest::whole_replay(text, conf));
    for (std::size_t k = 0; k < confs.size(); ++k) {
      if (as[k] == k) continue;
      ++grouped;
      INFO("round " << round << ": " << confs[k] << " replayed as " << confs[as[k]]);
      CHECK(outcomes[k] == outcomes[as[k]]);
    }
    if (round == 0) {
      std::uint64_t ooms = 0, retries = 0;
      for (const Outcome& o : outcomes) {
        ooms += o.ooms;
        retries += o.retries;
      }
      CHECK(ooms + retries > 0);  // the device is small enough for the release paths
    }
  }
  CHECK(grouped >= 30);  // the groups are not empty
}

TEST_CASE("same replay: settings apart in their idle keys are never grouped") {
  // Idle release changes what the pool holds between events whatever the sizes (a log with
  // timestamps): only settings equal in both idle keys may share a replay.
  const std::vector<std::string> confs = {"",
                                          "idle_release_ms:100",
                                          "idle_release_ms:200",
                                          "idle_release_ms:100,idle_release_floor_mb:64",
                                          "roundup_power2_divisions:4,idle_release_ms:100",
                                          "max_split_size_mb:22,idle_release_ms:100",
                                          "max_split_size_mb:24,idle_release_ms:100"};
  CHECK(replayed_as(confs, {1000, 4 * kMiB, 64 * kMiB}) ==
        std::vector<std::size_t>{0, 1, 2, 3, 1, 5, 5});
  // And they do replay apart: a block idle for 2 s goes back under 100 ms, not without it.
  const std::string text =
      R"({"schema":"cudapool.log/1","version":"0.1.0","devices":[{"id":0,"name":"t",)"
      R"("total_memory":85899345920}]})"
      "\n"
      R"({"seq":1,"t_ns":0,"tid":1,"dev":0,"action":"alloc","ptr":"0x1","size":67108864})"
      "\n"
      R"({"seq":2,"t_ns":1000,"tid":1,"dev":0,"action":"free_requested","ptr":"0x1","size":0})"
      "\n"
      R"({"seq":3,"t_ns":2000000000,"tid":1,"dev":0,"action":"alloc","ptr":"0x2","size":1000})"
      "\n";
  const Outcome off = tunetest::whole_replay(text, "");
  const Outcome on = tunetest::whole_replay(text, "idle_release_ms:100");
  CHECK(off != on);
  CHECK(on.idle_releases == 1);
  CHECK(on.mean_reserved < off.mean_reserved);
}
