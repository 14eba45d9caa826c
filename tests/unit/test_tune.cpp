// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_tune.cpp: cudapool tune's parts (tools/tune): a log read once replays as the
// streaming replay does; the sweep's candidates; the ranking; the conf string to paste; the
// recommendation on logs where one setting clearly wins, where none does, and over several logs.
// The one pass and its first look: test_tune_pass.cpp.
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "tests/unit/catch.h"
#include "tools/replay/recorded_log.h"
#include "tools/replay/replayer.h"
#include "tools/tune/sweep.h"
#include "tools/tune/tune.h"
#include "tools/tune/tune_report.h"

#include <nlohmann/json.hpp>

using namespace cudapool;
using namespace cudapool::tune;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

std::string header(const std::string& conf) {
  return R"({"schema":"cudapool.log/1","version":"0.1.0","conf":")" + conf +
         R"(","options":{"reuse_fence":"auto"},"devices":[{"id":0,"name":"t","total_memory":85899345920}]})";
}

std::string event(const char* action, std::uint64_t ptr, std::uint64_t size) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"%s","ptr":"0x%llx","size":%llu})",
                action, static_cast<unsigned long long>(ptr),
                static_cast<unsigned long long>(size));
  return buf;
}

// Growing batches: each step frees the last step's blocks and asks for slightly larger ones.
// With ordinary segments every step needs new segments (the freed ones are too small); with
// expandable segments the pages are reused.
std::string growing_log(const std::string& conf, int steps) {
  std::string s = header(conf) + "\n";
  std::uint64_t ptr = 0x10000;
  std::vector<std::uint64_t> live;
  for (int step = 0; step < steps; ++step) {
    for (std::uint64_t p : live) {
      s += event("free_requested", p, 0) + "\n";
      s += event("free_completed", p, 0) + "\n";
    }
    live.clear();
    for (int k = 0; k < 4; ++k) {
      const std::uint64_t size = (64 + 8 * step) * kMiB + 12345;
      s += event("alloc", ptr, size) + "\n";
      live.push_back(ptr);
      ptr += 0x1000;
    }
  }
  return s;
}

replay::RecordedLog recorded(const std::string& text) {
  std::istringstream in(text);
  return replay::read_log(in);
}

std::vector<LogInput> inputs(const std::vector<std::string>& texts) {
  std::vector<LogInput> out;
  for (const auto& t : texts) {
    LogInput in;
    in.path = "log" + std::to_string(out.size());
    in.open = [t](std::string*) { return in_memory(t); };
    in.rereadable = true;
    out.push_back(in);
  }
  return out;
}

TuneResult tuned(const std::vector<LogInput>& logs, const TuneOptions& options = {}) {
  TuneResult r;
  std::string error;
  REQUIRE(run_tune(logs, SweepInputs{}, options, &r, &error));
  CHECK(error.empty());
  return r;
}

}  // namespace

TEST_CASE("tune: a log read once replays to the same statistics as the streaming replay") {
  std::ifstream file(std::string(CUDAPOOL_SOURCE_DIR) + "/examples/logs/training-loop.jsonl");
  std::stringstream text;
  text << file.rdbuf();
  for (const char* conf : {"", "expandable_segments:True", "max_split_size_mb:20"}) {
    INFO(conf);
    replay::ReplaySettings settings;
    settings.conf = conf;
    replay::Replayer streamed(settings);
    std::istringstream in(text.str());
    streamed.feed_stream(in);
    replay::Replayer once(settings);
    once.replay(recorded(text.str()));
    REQUIRE(streamed.devices() == once.devices());
    const auto a = streamed.stats(0);
    const auto b = once.stats(0);
    CHECK(a.reserved_bytes[0].peak == b.reserved_bytes[0].peak);
    CHECK(a.allocated_bytes[0].peak == b.allocated_bytes[0].peak);
    CHECK(a.num_device_alloc == b.num_device_alloc);
    CHECK(a.num_device_free == b.num_device_free);
    CHECK(streamed.counts().lines == once.counts().lines);
    CHECK(streamed.counts().allocs == once.counts().allocs);
    CHECK(streamed.counts().fenced_frees == once.counts().fenced_frees);
  }
  // Bad lines are counted and located the same way.
  const std::string bad = header("") + "\nnot json\n" + event("alloc", 0x10, 100) + "\n" +
                          event("free_requested", 0x99, 0) + "\n";
  replay::Replayer streamed({});
  std::istringstream in(bad);
  streamed.feed_stream(in);
  replay::Replayer once({});
  once.replay(recorded(bad));
  CHECK(streamed.counts().malformed_lines == 1);
  CHECK(once.counts().malformed_lines == 1);
  CHECK(streamed.counts().unknown_frees == once.counts().unknown_frees);
  CHECK(streamed.problems().size() == once.problems().size());
}

TEST_CASE("tune: the sweep starts with the log's own settings and tries each key family once") {
  SweepInputs in;
  in.base_conf = "reuse_fence:auto";
  in.largest_request = 300 * kMiB;
  std::vector<Candidate> c = sweep(in);
  REQUIRE(!c.empty());
  CHECK(c[0].label == "own");
  CHECK(c[0].conf == "reuse_fence:auto");
  std::set<std::string> confs;
  for (const Candidate& x : c) CHECK(confs.insert(x.conf).second);  // no duplicates
  auto has = [&](const std::string& label) {
    for (const Candidate& x : c) {
      if (x.label == label) return true;
    }
    return false;
  };
  CHECK(has("defaults"));
  CHECK(has("expandable_segments:True"));
  CHECK(has("max_split_size_mb:20"));
  CHECK(has("max_split_size_mb:256"));
  CHECK(!has("max_split_size_mb:512"));  // not below the largest request: changes nothing
  CHECK(has("roundup_power2_divisions:4"));
  CHECK(has("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]"));
  CHECK(has("large_segment_size_mb:64"));
  CHECK(has("max_split_size_mb:128,max_non_split_rounding_mb:256"));
  CHECK(has("expandable_segments:True,roundup_power2_divisions:4"));
  CHECK(!has("garbage_collection_threshold:0.8"));  // no fraction: GC would do nothing
  for (const Candidate& x : c) {
    if (x.label != "own" && x.label != "defaults") CHECK(x.conf == "reuse_fence:auto," + x.changes);
  }
  CHECK(split_limits(20 * kMiB).empty());
  CHECK(split_limits(21 * kMiB) == std::vector<std::uint64_t>{20});

  in.fraction = 0.5;
  in.tries = {"max_split_size_mb:100", "expandable_segments:True"};
  c = sweep(in);
  CHECK(has("garbage_collection_threshold:0.8"));
  for (const Candidate& x : c) {
    if (x.label != "defaults")
      CHECK(x.conf.find("per_process_memory_fraction:0.5") != std::string::npos);
  }
  bool user_try = false;
  for (const Candidate& x : c) user_try |= x.user && x.changes == "max_split_size_mb:100";
  CHECK(user_try);
  // A --try equal to a swept setting is not replayed twice.
  int expandable = 0;
  for (const Candidate& x : c) expandable += x.changes == "expandable_segments:True" ? 1 : 0;
  CHECK(expandable == 1);
}

TEST_CASE("tune: ranking puts more OOMs than the own setting last, then orders by peak reserved") {
  std::vector<Outcome> o(4);
  o[0].peak_reserved = 100;
  o[0].ooms = 1;
  o[1].peak_reserved = 50;
  o[1].ooms = 2;  // smallest but more OOMs: last
  o[2].peak_reserved = 80;
  o[2].device_allocs = 9;
  o[3].peak_reserved = 80;
  o[3].device_allocs = 3;  // same peak, fewer cudaMalloc calls: first
  const std::vector<RankedRow> r = rank(o);
  REQUIRE(r.size() == 4);
  CHECK(r[0].candidate == 3);
  CHECK(r[1].candidate == 2);
  CHECK(r[2].candidate == 0);
  CHECK(r[3].candidate == 1);
  CHECK(r[0].vs_own == Approx(-0.2));
}

TEST_CASE(
    "tune: the conf string to paste has each key once, PyTorch's form without cudapool's keys") {
  Candidate c;
  c.conf = "reuse_fence:none,max_split_size_mb:128,expandable_segments:True,max_split_size_mb:256";
  CHECK(paste_conf(c, false) == "max_split_size_mb:256,expandable_segments:True,reuse_fence:none");
  CHECK(paste_conf(c, true) == "max_split_size_mb:256,expandable_segments:True");
  c.conf = "";
  CHECK(paste_conf(c, false).empty());
}

TEST_CASE("tune: a log where expandable segments clearly win gets them recommended") {
  const std::vector<LogInput> logs = inputs({growing_log("", 12)});
  TuneOptions options;
  options.threads = 2;
  const TuneResult r = tuned(logs, options);
  REQUIRE(r.ranked.size() == 1);
  const Candidate& best = r.candidates[r.ranked[0].front().candidate];
  CHECK(best.changes.find("expandable_segments:True") != std::string::npos);
  CHECK(!r.recommendation.keep_own);
  CHECK(r.recommendation.conf.find("expandable_segments:True") != std::string::npos);
  CHECK(r.recommendation.why.find("peak reserved") != std::string::npos);
  bool ipc_caveat = false;
  for (const auto& cav : r.recommendation.caveats)
    ipc_caveat |= cav.find("IPC") != std::string::npos;
  CHECK(ipc_caveat);
  // The own row is there, at +0%.
  bool own_seen = false;
  for (const RankedRow& row : r.ranked[0]) {
    if (row.candidate == 0) {
      own_seen = true;
      CHECK(row.vs_own == 0.0);
    }
  }
  CHECK(own_seen);

  // JSON: one object with every result and the recommendation.
  ReportContext ctx;
  ctx.paths = {"log0"};
  const nlohmann::json j = nlohmann::json::parse(json_report(r, ctx));
  CHECK(j.at("schema") == "cudapool.tune/1");
  CHECK(j.at("logs").at(0).at("results").size() == r.candidates.size());
  CHECK(j.at("recommendation").at("keep_own") == false);
  const std::string text = text_report(r, ctx);
  CHECK(text.find("CUDAPOOL_CONF='") != std::string::npos);
}

TEST_CASE("tune: when nothing beats the own setting by 1%, it says to keep it") {
  // One allocation freed and reallocated at the same size: every setting reserves the same.
  std::string s = header("") + "\n";
  for (int i = 0; i < 10; ++i) {
    s += event("alloc", 0x100, 4 * kMiB) + "\n" + event("free_requested", 0x100, 0) + "\n" +
         event("free_completed", 0x100, 0) + "\n";
  }
  const TuneResult r = tuned(inputs({s}));
  CHECK(r.recommendation.keep_own);
  CHECK(r.recommendation.why.find("none of the") != std::string::npos);
}

TEST_CASE("tune: several logs are decided by the worst one, and OOMs count at the device size") {
  // The second "rank" is larger: it decides.
  const std::vector<LogInput> logs = inputs({growing_log("", 4), growing_log("", 12)});
  TuneResult r = tuned(logs);
  REQUIRE(r.ranked.size() == 2);
  REQUIRE(r.worst.size() == r.candidates.size());
  for (const RankedRow& row : r.worst) {
    CHECK(row.outcome.peak_reserved == std::max(r.outcomes[0][row.candidate].peak_reserved,
                                                r.outcomes[1][row.candidate].peak_reserved));
  }
  CHECK(!r.recommendation.keep_own);
  CHECK(r.recommendation.why.find("worst of the 2 logs") != std::string::npos);
  CHECK(r.candidates[r.recommendation.candidate].changes.find("expandable") != std::string::npos);

  // A device smaller than the second log's live blocks (4 x 152 MiB): every setting runs out of
  // memory there, none in the first; the worst table sums them.
  TuneOptions small;
  small.device_memory = 512 * kMiB;
  r = tuned(logs, small);
  CHECK(r.outcomes[0][0].ooms == 0);
  CHECK(r.outcomes[1][0].ooms > 0);
  for (const RankedRow& row : r.worst) {
    CHECK(row.outcome.ooms ==
          r.outcomes[0][row.candidate].ooms + r.outcomes[1][row.candidate].ooms);
  }
}
