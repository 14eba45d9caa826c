// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_tune_idle.cpp: cudapool tune and idle release (tools/tune/idle.h): on
// hand-built logs with timestamps, bursts apart by long quiet gaps get an idle delay shorter than
// the gaps recommended, with less memory held over time; bursts whose gaps are too short for the
// delays that would help (releasing would map too much again) get none, and the why names the
// variant that would save most and its cost; a log without timestamps, or too short, gets no idle
// variant and a note; a log read once (stdin) has the variants in its one pass; under expandable
// segments the floors save (down to the floor), and the PyTorch string of a variant with larger
// pages has the setting's own pages. The costs are derived from idle_costs.h, so the logs keep
// their meaning when the constants change. Not here: the replay's clock (test_replay_idle.cpp),
// the pool's idle policy (test_pool_idle_clock.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/catch.h"
#include "tests/unit/tune_test_util.h"
#include "tools/tune/idle.h"
#include "tools/tune/idle_costs.h"
#include "tools/tune/tune.h"
#include "tools/tune/tune_report.h"

#include <nlohmann/json.hpp>

using namespace cudapool;
using namespace cudapool::tune;

namespace {

using tunetest::kMiB;
constexpr std::uint64_t kMs = 1000000;  // ns

// A log without reuse fences (frees at free_requested) on one device of `device` bytes.
struct LogText {
  std::string text;
  explicit LogText(std::uint64_t device, const std::string& conf = "") {
    text = R"({"schema":"cudapool.log/1","version":"0.1.0","conf":")" + conf +
           R"(","devices":[{"id":0,"name":"t","total_memory":)" + std::to_string(device) + "}]}\n";
  }
  void event(std::uint64_t t_ns, const char* action, std::uint64_t ptr, std::uint64_t size) {
    char buf[200];
    std::snprintf(
        buf, sizeof buf,
        R"({"seq":1,"t_ns":%llu,"tid":1,"dev":0,"action":"%s","ptr":"0x%llx","size":%llu})"
        "\n",
        static_cast<unsigned long long>(t_ns), action, static_cast<unsigned long long>(ptr),
        static_cast<unsigned long long>(size));
    text += buf;
  }
};

// `bursts` bursts, one every period_ns: each takes a block of `big` bytes (and, with small, a few
// 1 MiB blocks, reused) for burst_ns, then frees it; the log ends one period after the last burst
// began. t_step: the events' times are multiplied by it (0: no timestamps).
std::string bursts_log(int bursts, std::uint64_t burst_ns, std::uint64_t period_ns,
                       std::uint64_t big, bool small, std::uint64_t t_step = 1,
                       const std::string& conf = "") {
  LogText log(std::max<std::uint64_t>(4 * big, 80ull << 30), conf);
  std::uint64_t ptr = 0x1000;
  for (int b = 0; b < bursts; ++b) {
    const std::uint64_t t = static_cast<std::uint64_t>(b) * period_ns;
    const std::uint64_t block = ptr++;
    log.event(t * t_step, "alloc", block, big);
    for (int k = 0; small && k < 10; ++k) {
      const std::uint64_t at = t + burst_ns * static_cast<std::uint64_t>(k) / 10;
      log.event(at * t_step, "alloc", ptr, kMiB);
      log.event((at + 1000) * t_step, "free_requested", ptr++, 0);
    }
    log.event((t + burst_ns) * t_step, "free_requested", block, 0);
  }
  const std::uint64_t end = static_cast<std::uint64_t>(bursts) * period_ns;
  log.event(end * t_step, "alloc", ptr, 4096);  // the last event: the log's span ends here
  return log.text;
}

std::vector<LogInput> inputs(const std::string& text, bool rereadable,
                             std::shared_ptr<int> opened = std::make_shared<int>(0)) {
  LogInput in;
  in.path = "bursts";
  in.rereadable = rereadable;
  in.open = [text, opened](std::string*) {
    ++*opened;
    return in_memory(text);
  };
  return {in};
}

TuneResult tuned(const std::vector<LogInput>& logs, double cost_budget = kIdleCostBudget) {
  TuneResult r;
  std::string error;
  TuneOptions options;
  options.threads = 2;
  options.idle_cost_budget = cost_budget;
  REQUIRE(run_tune(logs, SweepInputs{}, options, &r, &error));
  return r;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("tune idle: bursts apart by long gaps get an idle delay shorter than the gaps") {
  // 6 bursts of 50 ms, 3 s apart: 256 MiB and small blocks held through every gap without idle
  // release.
  const std::uint64_t gap_ms = 2950;
  const std::string text = bursts_log(6, 50 * kMs, 3000 * kMs, 256 * kMiB, true);
  const TuneResult r = tuned(inputs(text, true));
  const IdleStudy& study = r.idle;
  REQUIRE(study.tried());
  CHECK(study.not_tried.empty());
  // Every delay up to the span (18 s), and the shortest with two floors.
  CHECK(study.rows.size() == 1 + std::size(kIdleDelaysMs) + 2);
  REQUIRE(study.chosen);
  const IdleRow& chosen = study.rows[*study.chosen];
  CHECK(chosen.delay_ms * 5 / 4 < gap_ms);  // given back within the gap
  CHECK(chosen.delay_ms == 100);            // the least held: the shortest delay
  CHECK(chosen.floor_mb == 0);
  // The figures are those of a replay of the whole log under that conf string.
  const Outcome alone = tunetest::whole_replay(text, chosen.setting.conf);
  CHECK(chosen.outcomes.at(0) == alone);
  CHECK(alone.idle_releases >= 6);  // each gap (the last one too)
  CHECK(alone.span_ns == 18000 * kMs);
  const IdleFigures f = idle_figures(study, *study.chosen);
  CHECK(f.vs_without < -0.5);  // held most of the time without it
  CHECK(f.mapped_again == alone.mapped_bytes - study.rows[0].outcomes[0].mapped_bytes);
  CHECK(f.mapped_again >= 5 * 256 * kMiB);  // the big block taken again in the next 5 bursts
  CHECK(f.cost_s ==
        Approx(remap_seconds(static_cast<double>(f.mapped_again),
                             static_cast<double>(alone.device_allocs) -
                                 static_cast<double>(study.rows[0].outcomes[0].device_allocs))));
  CHECK(f.cost_share < kIdleCostBudget);
  // A delay longer than the gap gives nothing back.
  for (std::size_t k = 1; k < study.rows.size(); ++k) {
    if (study.rows[k].delay_ms * kMs >= 3000 * kMs) {
      INFO(study.rows[k].setting.label);
      CHECK(idle_figures(study, k).vs_without == 0.0);
    }
  }

  // The recommendation: the delay, in CUDAPOOL_CONF only, and the memory held over time.
  const Recommendation& rec = r.recommendation;
  CHECK(rec.idle);
  CHECK_FALSE(rec.keep_own);
  CHECK(has(rec.conf, "idle_release_ms:100"));
  CHECK_FALSE(has(rec.pytorch_conf, "idle"));
  CHECK(rec.setting == chosen.setting.label);
  CHECK(rec.mean_reserved < 0.5 * rec.own_mean_reserved);
  CHECK(has(rec.why, "held over time (mean reserved over the log's 18 s): "));
  CHECK(has(rec.why, " instead of "));
  CHECK(has(rec.why, "with idle_release_ms:100, which maps "));
  bool cost_caveat = false;
  for (const std::string& c : rec.caveats) cost_caveat |= has(c, "measured on one GPU");
  CHECK(cost_caveat);

  // The report: the section in text, the object in JSON.
  ReportContext ctx;
  ctx.paths = {"bursts"};
  const std::string text_out = text_report(r, ctx);
  CHECK(has(text_out, "Held over time: idle release"));
  CHECK(has(text_out, "  * idle_release_ms:100 "));
  const nlohmann::json j = nlohmann::json::parse(json_report(r, ctx));
  const nlohmann::json& held = j.at("held_over_time");
  CHECK(held.at("tried") == true);
  CHECK(held.at("chosen") == chosen.setting.label);
  CHECK(held.at("rows").size() == study.rows.size());
  CHECK(held.at("rows").at(0).at("idle_release_ms") == 0);
  CHECK(j.at("recommendation").at("idle") == true);
  CHECK(j.at("logs").at(0).at("results").at(0).contains("mean_reserved"));
}

TEST_CASE("tune idle: releasing that costs more than the budget is not recommended, and said") {
  // A burst every 150 ms, 10 ms long: only idle_release_ms:100 gives the block back (after 100 to
  // 125 ms, within the 140 ms gap), and it is taken again 150 ms later. The block is large enough
  // that mapping it again costs five times the budget of its period.
  const double period_s = 0.150;
  const auto big =
      static_cast<std::uint64_t>(5 * kIdleCostBudget * period_s / kRemapSecondsPerByte) / kMiB *
      kMiB;
  const std::string text = bursts_log(20, 10 * kMs, 150 * kMs, big, false);
  const TuneResult r = tuned(inputs(text, true));
  const IdleStudy& study = r.idle;
  REQUIRE(study.tried());
  CHECK_FALSE(study.chosen);
  REQUIRE(study.most_saving);
  const IdleRow& most = study.rows[*study.most_saving];
  CHECK(most.delay_ms == 100);
  CHECK(most.floor_mb == 0);
  const IdleFigures f = idle_figures(study, *study.most_saving);
  CHECK(f.vs_without <= -kIdleMinSaving);  // it would save memory...
  CHECK(f.cost_share > kIdleCostBudget);   // ... at too high a cost
  CHECK(f.cost_share < 10 * kIdleCostBudget);
  // The floors were tried with it (the shortest delay): they keep the block, so they save
  // nothing.
  std::size_t floors = 0;
  for (std::size_t k = 1; k < study.rows.size(); ++k) {
    if (study.rows[k].floor_mb == 0) continue;
    ++floors;
    CHECK(study.rows[k].delay_ms == 100);
    CHECK_FALSE(idle_affordable(idle_figures(study, k)));
  }
  CHECK(floors == 2);
  // Longer delays give nothing back.
  for (std::size_t k = 1; k < study.rows.size(); ++k) {
    if (study.rows[k].delay_ms > 100) CHECK(idle_figures(study, k).vs_without == 0.0);
  }

  const Recommendation& rec = r.recommendation;
  CHECK_FALSE(rec.idle);
  CHECK_FALSE(has(rec.conf, "idle"));
  INFO(rec.why);
  CHECK(has(rec.why, "held over time (mean reserved over the log's 3 s): "));
  CHECK(has(rec.why, "; idle_release_ms:100 would hold "));
  CHECK(has(rec.why, " on average instead of "));
  CHECK(has(rec.why, " again: about "));
  CHECK(has(rec.why, "% of the log's 3 s (tune allows 2%)"));
  for (const std::string& c : rec.caveats) CHECK_FALSE(has(c, "idle_release_ms"));

  // With a budget of ten times the default (--idle-cost 20), the same variant is recommended.
  const TuneResult dear = tuned(inputs(text, true), 10 * kIdleCostBudget);
  CHECK(dear.idle.cost_budget == 10 * kIdleCostBudget);
  REQUIRE(dear.idle.chosen);
  CHECK(*dear.idle.chosen == *study.most_saving);
  CHECK(dear.recommendation.idle);
  CHECK(has(dear.recommendation.conf, "idle_release_ms:100"));
  // And with half the cost it takes, it is not, and why names that budget.
  const TuneResult half = tuned(inputs(text, true), f.cost_share / 2);
  CHECK_FALSE(half.idle.chosen);
  CHECK(has(half.recommendation.why, "(tune allows "));
  CHECK_FALSE(has(half.recommendation.why, "(tune allows 2%)"));
}

TEST_CASE("tune idle: a log without timestamps, or shorter than the first delay, gets none") {
  // The same bursts with every t_ns 0, and 100 times faster (a span of 30 ms).
  for (const std::uint64_t step : {std::uint64_t{0}, std::uint64_t{1}}) {
    INFO("t_ns step " << step);
    const std::string text = step == 0 ? bursts_log(6, 50 * kMs, 3000 * kMs, 256 * kMiB, true, 0)
                                       : bursts_log(6, kMs / 2, 30 * kMs / 6, 256 * kMiB, true);
    const TuneResult r = tuned(inputs(text, true));
    CHECK_FALSE(r.idle.tried());
    CHECK(r.idle.rows.empty());
    CHECK_FALSE(r.recommendation.idle);
    CHECK_FALSE(has(r.recommendation.conf, "idle"));
    if (step == 0) {
      CHECK(has(r.idle.not_tried, "no timestamps"));
      CHECK_FALSE(has(r.recommendation.why, "held over time"));  // nothing over time to tell
    } else {
      CHECK(has(r.idle.not_tried, "span 30.0 ms, less than the shortest idle_release_ms"));
    }
    ReportContext ctx;
    ctx.paths = {"bursts"};
    CHECK(has(text_report(r, ctx), "Held over time: idle release not tried: "));
    const nlohmann::json j = nlohmann::json::parse(json_report(r, ctx));
    CHECK(j.at("held_over_time").at("tried") == false);
    CHECK(j.at("held_over_time").at("not_tried") == r.idle.not_tried);
  }
}

TEST_CASE("tune idle: a log read once has the idle variants in its one pass, the file's own") {
  const std::string text = bursts_log(6, 50 * kMs, 3000 * kMs, 256 * kMiB, true);
  auto opened = std::make_shared<int>(0);
  const TuneResult once = tuned(inputs(text, false, opened));
  CHECK(*opened == 1);
  REQUIRE(once.idle.tried());
  auto reopened = std::make_shared<int>(0);
  const TuneResult twice = tuned(inputs(text, true, reopened));
  CHECK(*reopened == 2);  // the idle variants in a second pass
  REQUIRE(twice.idle.tried());
  CHECK(once.idle.base == twice.idle.base);
  // The same rows (the floors from the first look), with the same figures; the same choice and
  // report.
  REQUIRE(once.idle.rows.size() == twice.idle.rows.size());
  for (std::size_t k = 0; k < once.idle.rows.size(); ++k) {
    INFO(twice.idle.rows[k].setting.label);
    CHECK(once.idle.rows[k].setting.conf == twice.idle.rows[k].setting.conf);
    CHECK(once.idle.rows[k].outcomes == twice.idle.rows[k].outcomes);
  }
  CHECK(std::count_if(once.idle.rows.begin(), once.idle.rows.end(),
                      [](const IdleRow& r) { return r.floor_mb != 0; }) == 2);
  REQUIRE(once.idle.chosen);
  CHECK(once.idle.chosen == twice.idle.chosen);
  CHECK(once.recommendation.conf == twice.recommendation.conf);
  ReportContext ctx;
  ctx.paths = {"bursts"};
  // (but the timing line: a log read once shares fewer replays)
  const auto untimed = [&](const TuneResult& r) {
    const std::string text = text_report(r, ctx);
    return text.substr(0, text.rfind("\n(") + 1);
  };
  CHECK(untimed(once) == untimed(twice));
  // The own setting's variants and expandable segments' were replayed beside the sweep.
  CHECK(once.settings >= once.candidates.size() + 2 * (std::size(kIdleDelaysMs) + 2));
}

TEST_CASE("tune idle: under expandable segments, larger handles make giving back affordable") {
  // 2 GiB taken for 10 ms every 150 ms: given back in 20 MiB pages it costs 103 mappings a period
  // (4% of it with the bytes); in handles of 12 or 51 pages (expandable_handle_mb:256 or 1024) 9
  // or 3 (1.1%, 0.9%), at the same peak (the segment grows by the same pages).
  const std::uint64_t gib = 1024 * kMiB;
  const std::string text =
      bursts_log(20, 10 * kMs, 150 * kMs, 2 * gib, false, 1, "expandable_segments:True");
  const TuneResult r = tuned(inputs(text, true));
  const IdleStudy& study = r.idle;
  REQUIRE(study.tried());
  std::size_t pages = 0;
  for (std::size_t k = 1; k < study.rows.size(); ++k) {
    const IdleRow& row = study.rows[k];
    const IdleFigures f = idle_figures(study, k);
    INFO(row.setting.label);
    if (row.handle_mb != 0) {
      ++pages;
      CHECK(has(row.setting.conf, "expandable_handle_mb:" + std::to_string(row.handle_mb)));
      CHECK(has(idle_keys(row), "expandable_handle_mb:"));
    }
    if (row.delay_ms == 100 && row.floor_mb == 0) {
      // Handles mapped again: the bytes over the handle (whole 20 MiB pages), costed per handle.
      const double handle =
          row.handle_mb != 0 ? static_cast<double>(row.handle_mb * kMiB / (20 * kMiB) * 20 * kMiB)
                             : 20.0 * kMiB;
      CHECK(f.mappings_again == std::ceil(static_cast<double>(f.mapped_again) / handle));
      CHECK(f.cost_s ==
            Approx(remap_seconds(static_cast<double>(f.mapped_again), f.mappings_again)));
      CHECK(f.vs_without <= -kIdleMinSaving);
      CHECK(f.peak_reserved <= f.peak_without);
      CHECK(idle_affordable(f) == (row.handle_mb != 0));  // 20 MiB handles cost too much
    }
  }
  CHECK(pages == std::size(kIdleHandlesMb) * idle_delays(3000 * kMs).size());  // a 3 s span
  // The floors (512 and 1024 MiB, with 20 MiB pages): the 2 GiB range goes back down to the
  // floor, so they save, less than the same delay without a floor (idle_release_floor_mb:
  // docs/pool-policy.md, "Idle release").
  const auto no_floor = std::find_if(study.rows.begin(), study.rows.end(), [](const IdleRow& row) {
    return row.delay_ms == 100 && row.floor_mb == 0 && row.handle_mb == 0;
  });
  REQUIRE(no_floor != study.rows.end());
  const IdleFigures whole = idle_figures(study, no_floor - study.rows.begin());
  std::size_t floors = 0;
  for (std::size_t k = 1; k < study.rows.size(); ++k) {
    if (study.rows[k].floor_mb == 0) continue;
    ++floors;
    const IdleFigures f = idle_figures(study, k);
    INFO(study.rows[k].setting.label);
    CHECK(f.releases > 0);
    CHECK(f.vs_without <= -kIdleMinSaving);
    CHECK(f.mean_reserved > whole.mean_reserved);
    CHECK(f.mapped_again < whole.mapped_again);
  }
  CHECK(floors == 2);
  REQUIRE(study.chosen);
  const IdleRow& chosen = study.rows[*study.chosen];
  CHECK(chosen.delay_ms == 100);
  CHECK(chosen.handle_mb == 1024);  // the same mean as 256 MiB handles, and cheaper
  CHECK(has(r.recommendation.conf, "expandable_handle_mb:1024"));
  CHECK(has(r.recommendation.conf, "idle_release_ms:100"));
  // PyTorch has neither key: its string is the setting's.
  CHECK(r.recommendation.pytorch_conf == "expandable_segments:True");
  ReportContext ctx;
  ctx.paths = {"bursts"};
  CHECK(has(text_report(r, ctx),
            "PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True'  (PyTorch's own allocator: its "
            "keys only)\n"));
}

TEST_CASE("tune idle: a larger-handle variant keeps the setting's own page") {
  // The bursts above on a setting of 64 MiB pages: the variant of 1024 MiB handles (16 pages) is
  // recommended, with the setting's page; PyTorch's string is the setting's.
  const std::uint64_t gib = 1024 * kMiB;
  const std::string text = bursts_log(20, 10 * kMs, 150 * kMs, 2 * gib, false, 1,
                                      "expandable_segments:True,large_segment_size_mb:64");
  const TuneResult r = tuned(inputs(text, true));
  REQUIRE(r.idle.chosen);
  CHECK(r.idle.rows[*r.idle.chosen].handle_mb == 1024);
  const Recommendation& rec = r.recommendation;
  CHECK(rec.idle);
  CHECK(rec.conf ==
        "expandable_segments:True,large_segment_size_mb:64,idle_release_ms:100,"
        "expandable_handle_mb:1024");
  CHECK(rec.pytorch_conf == "expandable_segments:True,large_segment_size_mb:64");
}

TEST_CASE("tune idle: larger handles keep the peak where larger pages would raise it") {
  // 30 GiB + 20 MiB taken for 10 ms every 2 s. In 1 GiB pages the segment would grow to 31 GiB
  // (+3.2%); handles of up to 1 GiB back the same 20 MiB pages as the setting's, so the peak is
  // the same, and mapping again costs 31 handles a burst (about 1% of the span).
  const std::uint64_t gib = 1024 * kMiB;
  const std::string text = bursts_log(6, 10 * kMs, 2000 * kMs, 30 * gib + 20 * kMiB, false, 1,
                                      "expandable_segments:True");
  const TuneResult r = tuned(inputs(text, true));
  const IdleStudy& study = r.idle;
  REQUIRE(study.tried());
  REQUIRE(study.chosen);
  const IdleRow& chosen = study.rows[*study.chosen];
  CHECK(chosen.handle_mb == 1024);
  std::size_t handles = 0;
  for (std::size_t k = 1; k < study.rows.size(); ++k) {
    if (study.rows[k].handle_mb == 0) continue;
    ++handles;
    const IdleFigures f = idle_figures(study, k);
    INFO(study.rows[k].setting.label);
    CHECK(f.peak_reserved <= f.peak_without);
    if (study.rows[k].delay_ms != 100) continue;
    CHECK(f.vs_without <= -kIdleMinSaving);
    CHECK(idle_affordable(f));
  }
  CHECK(handles > 0);
}
