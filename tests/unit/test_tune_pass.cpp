// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_tune_pass.cpp: cudapool tune's one pass (tools/tune/pass.h) and its first look
// (tune.h, first_look.h): the decoder's batches hold the whole log; every setting's outcome is
// its replay of the whole log whatever the batches and threads; the look's requests; the settings
// replayed hold every sweep up to the bound; a log read once gets the tune of a log read twice; a
// look at part of a log gets the tune of a look at all of it; the own settings, errors, and a log
// that grows between two passes. Not here: the sweep, the ranking, the recommendation
// (test_tune.cpp).
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <sstream>
#include <string>

#include "tests/unit/catch.h"
#include "tests/unit/tune_test_util.h"
#include "tools/replay/recorded_log.h"
#include "tools/replay/replayer.h"
#include "tools/tune/first_look.h"
#include "tools/tune/pass.h"
#include "tools/tune/sweep.h"
#include "tools/tune/tune.h"

using namespace cudapool;
using namespace cudapool::tune;
using tunetest::whole_replay;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string example() {
  return read_file(std::string(CUDAPOOL_SOURCE_DIR) + "/examples/logs/training-loop.jsonl");
}

std::string large() {
  return read_file(std::string(CUDAPOOL_SOURCE_DIR) + "/tests/cli/fixtures/tune/large.jsonl");
}

std::string header(const std::string& conf) {
  return R"({"schema":"cudapool.log/1","version":"0.1.0","conf":")" + conf +
         R"(","devices":[{"id":0,"name":"t","total_memory":85899345920}]})";
}

std::string alloc(std::uint64_t ptr, std::uint64_t size) {
  return R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"alloc","ptr":"0x)" + std::to_string(ptr) +
         R"(","size":)" + std::to_string(size) + "}";
}

LogInput input(const std::string& name, const std::string& text, bool rereadable) {
  LogInput in;
  in.path = name;
  in.open = [text](std::string*) { return in_memory(text); };
  in.rereadable = rereadable;
  return in;
}

}  // namespace

TEST_CASE("tune pass: the decoder's batches hold every event and problem of the log, in order") {
  const std::string text = example() + "not json\n\n" + example();
  std::istringstream whole_in(text);
  const replay::RecordedLog whole = replay::read_log(whole_in);
  for (const std::size_t size : {std::size_t{1}, std::size_t{7}, std::size_t{100000}}) {
    INFO("batches of " << size);
    std::istringstream in(text);
    replay::LogDecoder decoder(in);
    decoder.read_header();
    REQUIRE(decoder.tally().has_header);
    CHECK(decoder.tally().header.conf == std::optional<std::string>(""));
    CHECK(decoder.tally().lines == 2);  // the header and the first event, held for the batch
    std::vector<replay::RecordedEvent> events;
    std::vector<replay::Problem> problems;
    replay::EventBatch batch;
    std::size_t batches = 0;
    while (decoder.next_batch(&batch, size)) {
      CHECK(batch.events.size() <= size);
      events.insert(events.end(), batch.events.begin(), batch.events.end());
      problems.insert(problems.end(), batch.problems.begin(), batch.problems.end());
      ++batches;
    }
    CHECK_FALSE(decoder.next_batch(&batch, size));  // and ever after
    CHECK(batches >= whole.events.size() / size);
    REQUIRE(events.size() == whole.events.size());
    for (std::size_t i = 0; i < events.size(); ++i) {
      CHECK(events[i].line == whole.events[i].line);
      CHECK(events[i].event.ptr == whole.events[i].event.ptr);
    }
    const replay::LogTally& t = decoder.tally();
    CHECK(t.lines == whole.lines);
    CHECK(t.malformed_lines == 1);
    CHECK(t.blank_lines == 1);
    CHECK(t.event_count == whole.events.size());
    CHECK(t.allocs == whole.allocs);
    CHECK(t.largest_request == whole.largest_request);
    REQUIRE(problems.size() == 2);  // the bad line and the second header, in line order
    CHECK(problems[0].what.find("malformed") != std::string::npos);
    CHECK(problems[1].what.find("a second header") != std::string::npos);
    CHECK(problems[0].line < problems[1].line);
    CHECK(t.problems.size() == 2);
  }
}

TEST_CASE("tune pass: each setting's outcome is its replay of the whole log, however it is cut") {
  const std::vector<std::string> confs = {"", "expandable_segments:True", "max_split_size_mb:20",
                                          "roundup_power2_divisions:4",
                                          "garbage_collection_threshold:0.8,"
                                          "per_process_memory_fraction:0.3"};
  for (const std::string& text : {example(), large(), std::string(header("") + "\n")}) {
    std::vector<Outcome> expected;
    for (const std::string& conf : confs) expected.push_back(whole_replay(text, conf));
    struct Cut {
      std::size_t batch, held;
      int threads;
    };
    for (const Cut cut : {Cut{1, 1, 1}, Cut{7, 2, 3}, Cut{500, 1, 2}, Cut{kBatchEvents, 4, 8}}) {
      INFO("batches of " << cut.batch << ", " << cut.held << " held, " << cut.threads
                         << " threads");
      std::istringstream in(text);
      replay::LogDecoder decoder(in);
      decoder.read_header();
      PassOptions options;
      options.threads = cut.threads;
      options.batch_events = cut.batch;
      options.max_batches = cut.held;
      const std::vector<Outcome> got = replay_pass(decoder, confs, options);
      REQUIRE(got.size() == confs.size());
      for (std::size_t c = 0; c < confs.size(); ++c) {
        INFO(confs[c]);
        CHECK(got[c] == expected[c]);
      }
    }
  }
  // --device-memory reaches every pool.
  std::istringstream in(large());
  replay::LogDecoder decoder(in);
  decoder.read_header();
  PassOptions options;
  options.device_memory = 8ull << 30;
  const std::vector<Outcome> small = replay_pass(decoder, {""}, options);
  CHECK(small[0].device_memory == 8ull << 30);
  CHECK(small[0].ooms > whole_replay(large(), "").ooms);
}

TEST_CASE("tune first look: every size of an alloc or oom event, and the largest alloc") {
  std::istringstream in(
      example() + alloc(9999, 123) + "\n" +
      R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"oom","ptr":"0x0","size":77777777777})" + "\n" +
      R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"segment_alloc",)" +
      R"("ptr":"0x10","size":555})" + "\n");
  const replay::RecordedLog log = replay::read_log(in);
  replay::EventBatch batch;
  batch.events = log.events;
  RequestSizes r;
  r.add(batch);
  CHECK(r.known);
  CHECK(r.largest == log.largest_request);  // an oom's size is not a request that was served
  CHECK(r.largest < 77777777777);
  CHECK(r.sizes.count(123) == 1);
  CHECK(r.sizes.count(77777777777) == 1);
  CHECK(r.sizes.count(555) == 0);
  std::set<std::uint64_t> expected;
  for (const replay::RecordedEvent& e : log.events) {
    if (e.event.kind == replay::EventKind::kAlloc || e.event.kind == replay::EventKind::kOom)
      expected.insert(e.event.size);
  }
  CHECK(std::set<std::uint64_t>(r.sizes.begin(), r.sizes.end()) == expected);
  // The same events again: nothing new.
  const std::uint64_t changes = r.changes();
  r.add(batch);
  CHECK(r.changes() == changes);
  // More distinct sizes than kept: not known.
  replay::EventBatch many;
  for (std::uint64_t size = 1; size <= kMaxScannedSizes + 1; ++size) {
    replay::RecordedEvent e;
    e.event.kind = replay::EventKind::kAlloc;
    e.event.size = size << 10;
    many.events.push_back(e);
  }
  r.add(many);
  CHECK_FALSE(r.known);
  CHECK(r.sizes.empty());
  CHECK(r.changes() > changes);
}

TEST_CASE("tune pass: the settings replayed hold every sweep up to the bound, and only those") {
  SweepInputs in;
  in.base_conf = "reuse_fence:auto";
  in.fraction = 0.5;  // the garbage collection candidates, whose split limit depends on the bound
  in.tries = {"max_split_size_mb:512", "roundup_power2_divisions:4"};
  const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
  for (const std::uint64_t bound :
       {std::uint64_t{0}, 20 * kMiB, 20 * kMiB + 1, 300 * kMiB, 3000 * kMiB, max}) {
    INFO("bound " << bound);
    std::set<std::string> replayed;
    for (const Candidate& c : sweep_up_to(in, bound)) CHECK(replayed.insert(c.conf).second);
    std::set<std::string> union_of;
    for (const std::uint64_t x :
         {std::uint64_t{0}, std::uint64_t{1}, 20 * kMiB, 20 * kMiB + 1, 33 * kMiB, 65 * kMiB,
          129 * kMiB, 300 * kMiB, 513 * kMiB, 3000 * kMiB, 20000 * kMiB, max}) {
      if (x > bound) continue;
      SweepInputs one = in;
      one.largest_request = x;
      for (const Candidate& c : sweep(one)) {
        INFO(c.conf);
        CHECK(replayed.count(c.conf) == 1);
        union_of.insert(c.conf);
      }
    }
    CHECK(union_of == replayed);
  }
}

TEST_CASE("tune: a log read once gets the tune of the same log read twice") {
  for (const auto& fraction : {std::optional<double>{}, std::optional<double>{0.6}}) {
    SweepInputs in;
    in.fraction = fraction;
    in.tries = {"max_split_size_mb:100"};
    TuneResult twice, once;
    std::string error;
    REQUIRE(
        run_tune({input("a", large(), true), input("b", example(), true)}, in, {}, &twice, &error));
    REQUIRE(
        run_tune({input("a", large(), true), input("b", example(), false)}, in, {}, &once, &error));
    CHECK(once.replayed > twice.replayed);  // every split limit, then only those that apply
    CHECK(twice.settings >= twice.candidates.size());
    CHECK(twice.replayed <= twice.settings);
    REQUIRE(once.candidates.size() == twice.candidates.size());
    for (std::size_t c = 0; c < once.candidates.size(); ++c) {
      CHECK(once.candidates[c].conf == twice.candidates[c].conf);
      CHECK(once.candidates[c].label == twice.candidates[c].label);
      CHECK(once.candidates[c].user == twice.candidates[c].user);
    }
    CHECK(once.outcomes == twice.outcomes);
    CHECK(once.recommendation.conf == twice.recommendation.conf);
    CHECK(once.recommendation.why == twice.recommendation.why);
    CHECK(once.notes.empty());
  }
}

TEST_CASE("tune: the own settings are the first header's conf; a fraction in them applies") {
  const std::string headerless = alloc(16, 30 * kMiB) + "\n";
  const std::string own = header("max_split_size_mb:128,per_process_memory_fraction:0.5") + "\n" +
                          alloc(16, 300 * kMiB) + "\n";
  for (const bool rereadable : {true, false}) {
    TuneResult r;
    std::string error;
    REQUIRE(run_tune({input("a", headerless, rereadable), input("b", own, rereadable)}, {}, {}, &r,
                     &error));
    REQUIRE(!r.candidates.empty());
    CHECK(r.candidates[0].label == "own");
    CHECK(r.candidates[0].conf ==
          "max_split_size_mb:128,per_process_memory_fraction:0.5,per_process_memory_fraction:0.5");
    CHECK(r.fraction == std::optional<double>(0.5));
    REQUIRE(r.logs.size() == 2);
    CHECK(!r.logs[0].has_header);
    CHECK(r.logs[1].largest_request == 300 * kMiB);
    CHECK(r.outcomes[0].size() == r.candidates.size());
  }
}

TEST_CASE("tune: a log that cannot be read or holds no allocation is an error") {
  TuneResult r;
  std::string error;
  CHECK_FALSE(run_tune({input("empty", "", true)}, {}, {}, &r, &error));
  CHECK(error ==
        "empty: no alloc events (0 lines, 0 malformed): nothing to tune; is it a "
        "cudapool.log/1 file (CUDAPOOL_LOG)?");
  error.clear();
  CHECK_FALSE(
      run_tune({input("a", example(), false), input("junk", "x\ny\n", false)}, {}, {}, &r, &error));
  CHECK(error.find("junk: no alloc events (2 lines, 2 malformed)") == 0);
  LogInput missing;
  missing.path = "gone";
  missing.open = [](std::string* e) -> std::shared_ptr<LogSource> {
    *e = "gone: No such file or directory";
    return nullptr;
  };
  for (const bool rereadable : {true, false}) {
    missing.rereadable = rereadable;
    error.clear();
    CHECK_FALSE(run_tune({input("a", example(), rereadable), missing}, {}, {}, &r, &error));
    CHECK(error == "gone: No such file or directory");
  }
}

namespace {

std::string free_line(std::uint64_t ptr) {
  return R"({"seq":1,"t_ns":1,"tid":1,"dev":0,"action":"free_requested","ptr":"0x)" +
         std::to_string(ptr) + R"("})";
}

// Powers of two first (every rounding gives them the same block, and no request passes 64 MiB);
// then sizes that roundings tell apart and a request of 300 MiB (more split limits).
std::string phased_log() {
  std::string text = header("") + "\n";
  std::uint64_t ptr = 16;
  auto steps = [&](std::initializer_list<std::uint64_t> sizes, int count) {
    for (int step = 0; step < count; ++step) {
      std::vector<std::uint64_t> held;
      for (const std::uint64_t size : sizes) {
        text += alloc(ptr, size + static_cast<std::uint64_t>(step % 3) * 4096 * (size > kMiB));
        text += "\n";
        held.push_back(ptr++);
      }
      for (std::size_t i = 0; i < held.size(); i += 2) text += free_line(held[i]) + "\n";
    }
  };
  steps({4096, 2 * kMiB, 64 * kMiB, 512}, 40);
  steps({50 * kMiB + 12345, 300 * kMiB, 3 * kMiB + 5, 4096}, 20);
  return text;
}

}  // namespace

TEST_CASE("tune: a first look at part of the log gives the figures of a look at all of it") {
  SweepInputs in;
  in.tries = {"max_split_size_mb:100", "roundup_power2_divisions:8"};
  for (const std::string& text : {phased_log(), large(), example()}) {
    TuneResult whole;
    std::string error;
    REQUIRE(run_tune({input("a", text, true)}, in, {}, &whole, &error));
    for (const std::size_t look : {std::size_t{1}, std::size_t{30}, std::size_t{200}}) {
      INFO("first look " << look << " events");
      for (const bool two_logs : {false, true}) {
        std::vector<LogInput> logs = {input("a", text, true)};
        if (two_logs) logs.push_back(input("b", text, true));
        TuneOptions options;
        options.first_look_events = look;
        TuneResult part;
        REQUIRE(run_tune(logs, in, options, &part, &error));
        CHECK(part.settings == whole.settings);
        REQUIRE(part.candidates.size() == whole.candidates.size());
        for (std::size_t c = 0; c < part.candidates.size(); ++c)
          CHECK(part.candidates[c].conf == whole.candidates[c].conf);
        CHECK(part.outcomes[0] == whole.outcomes[0]);
        if (two_logs) CHECK(part.outcomes[1] == whole.outcomes[0]);
        CHECK(part.recommendation.conf == whole.recommendation.conf);
        CHECK(part.notes.empty());
      }
      // Read once, longer than the look: every setting is replayed, to the same figures.
      TuneOptions options;
      options.first_look_events = look;
      TuneResult once;
      REQUIRE(run_tune({input("a", text, false)}, in, options, &once, &error));
      CHECK(once.replayed >= once.settings);
      CHECK(once.outcomes == whole.outcomes);
    }
  }
  // The phased log's look at its first steps groups the roundings, which its later sizes separate
  // (split limits watched beside a replay would part after the look and add replays: not here).
  TuneResult whole, part;
  std::string error;
  TuneOptions options;
  options.watch_split_limits = false;
  REQUIRE(run_tune({input("a", phased_log(), true)}, in, options, &whole, &error));
  options.first_look_events = 30;
  auto opened = std::make_shared<int>(0);
  LogInput counted = input("a", phased_log(), true);
  counted.open = [=](std::string*) {
    ++*opened;
    return in_memory(phased_log());
  };
  REQUIRE(run_tune({counted}, in, options, &part, &error));
  CHECK(*opened == 2);  // a second pass
  // Each setting replayed in the first pass is the first of its group in the end too.
  CHECK(part.replayed == whole.replayed);
  CHECK(whole.replayed < whole.settings);
}

TEST_CASE("tune: a log that grows between the two passes is tuned with a note") {
  const std::string before = phased_log();
  const std::string after = before + alloc(99999, 10 * kMiB) + "\n";
  auto opened = std::make_shared<int>(0);
  LogInput growing;
  growing.path = "growing";
  growing.rereadable = true;
  growing.open = [=](std::string*) { return in_memory((*opened)++ == 0 ? before : after); };
  TuneOptions options;
  options.first_look_events = 30;
  TuneResult r;
  std::string error;
  REQUIRE(run_tune({growing}, {}, options, &r, &error));
  CHECK(*opened == 2);
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].find("growing changed between tune's passes") != std::string::npos);
  CHECK(r.candidates.size() == r.outcomes[0].size());
}
