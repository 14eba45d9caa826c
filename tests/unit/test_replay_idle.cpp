// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_replay_idle.cpp: the replay's clock (tools/replay/replayer_time.cpp): idle
// release ticked at the log's idle_release events when the replayed idle settings are the log
// header's, simulated from the events' t_ns otherwise, and HeldOverTime (the mean reserved over the
// log's span) in the counts and reports. Hand-written logs only. Not here: the pool's idle policy
// itself (test_pool_idle_clock.cpp), the other replay behaviour (test_replay*.cpp).
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>

#include "tests/unit/catch.h"
#include "tools/replay/replayer.h"
#include "tools/replay/report.h"

#include <nlohmann/json.hpp>

using namespace cudapool;
using namespace cudapool::replay;

namespace {

constexpr std::uint64_t kMiB = 1ull << 20;
constexpr std::uint64_t kGiB = 1ull << 30;
constexpr std::uint64_t kMs = 1000000;  // ns

std::string header(const std::string& conf) {
  return R"({"schema":"cudapool.log/1","version":"0.1.0","conf":")" + conf +
         R"(","devices":[{"id":0,"name":"t","total_memory":85899345920}]})"
         "\n";
}

// One event line at t_ns.
std::string event(std::uint64_t t_ns, const char* action, std::uint64_t ptr, std::uint64_t size) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                R"({"seq":1,"t_ns":%llu,"tid":1,"dev":0,"action":"%s","ptr":"0x%llx","size":%llu})"
                "\n",
                static_cast<unsigned long long>(t_ns), action, static_cast<unsigned long long>(ptr),
                static_cast<unsigned long long>(size));
  return buf;
}

std::string alloc(std::uint64_t t_ns, std::uint64_t ptr, std::uint64_t size) {
  return event(t_ns, "alloc", ptr, size);
}
std::string free_(std::uint64_t t_ns, std::uint64_t ptr) {
  return event(t_ns, "free_requested", ptr, 0);
}

Replayer run(const std::string& text, ReplaySettings settings = {}) {
  Replayer r(std::move(settings));
  std::istringstream in(text);
  r.feed_stream(in);
  return r;
}

ReplaySettings with_conf(const std::string& conf) {
  ReplaySettings s;
  s.conf = conf;
  return s;
}

std::int64_t stat(const Replayer& r, const std::string& name) {
  std::int64_t found = -12345;
  pool::for_each_stat(r.pool(0).stats(), [&](std::string_view n, std::int64_t v) {
    if (n == name) found = v;
  });
  return found;
}

// A 30 MiB segment freed at 1 ms, then the log's ticks every 25 ms (idle_release_ms:100): four
// that give nothing back, and the fifth, at 125 ms, with the segment's segment_free before it.
std::string logged_ticks(int ticks) {
  std::string log = header("idle_release_ms:100") + alloc(0, 0x10, 30 * kMiB) + free_(kMs, 0x10);
  for (int i = 1; i <= ticks; ++i) {
    const std::uint64_t t = static_cast<std::uint64_t>(i) * 25 * kMs;
    if (i == 5) log += event(t, "segment_free", 0x7f0000000000, 30 * kMiB);
    log += event(t, "idle_release", 0, i == 5 ? 30 * kMiB : 0);
  }
  return log;
}

}  // namespace

TEST_CASE("replay idle: with the log's idle settings the clock ticks at its idle_release events") {
  const Replayer four = run(logged_ticks(4));
  CHECK(four.idle_ticks_from_log());
  CHECK(four.counts().idle_release_events == 4);
  CHECK(four.counts().idle_ticks_simulated == 0);
  CHECK(four.reserved_now() == 30 * kMiB);
  CHECK(four.counts().idle_releases == 0);  // ticks that gave nothing back

  const Replayer five = run(logged_ticks(5));
  CHECK(five.idle_ticks_from_log());
  CHECK(five.counts().idle_release_events == 5);
  CHECK(five.counts().idle_ticks_simulated == 0);
  CHECK(five.reserved_now() == 0);
  CHECK(stat(five, "num_device_free") == 1);
  CHECK(five.counts().idle_releases == 1);  // the fifth tick, of the five logged
  CHECK(five.counts().idle_released_bytes == 30 * kMiB);
  CHECK(stat(five, "reserved_bytes.all.current") == 0);
  CHECK(five.problems().empty());

  // The same log replayed with --conf equal to its header's: still the log's ticks.
  const Replayer same = run(logged_ticks(5), with_conf("idle_release_ms:100"));
  CHECK(same.idle_ticks_from_log());
  CHECK(same.reserved_now() == 0);
}

TEST_CASE("replay idle: with other idle settings the log's ticks are counted, not replayed") {
  for (const char* conf : {"", "idle_release_ms:0", "idle_release_ms:100,idle_release_floor_mb:1",
                           "idle_release_ms:200"}) {
    INFO(conf);
    const Replayer r = run(logged_ticks(5), with_conf(conf));
    CHECK_FALSE(r.idle_ticks_from_log());
    CHECK(r.counts().idle_release_events == 5);
  }
  // Off: nothing is released at all.
  CHECK(run(logged_ticks(5), with_conf("")).reserved_now() == 30 * kMiB);
  // 200 ms (ticks of 50 ms, simulated from 0): the segment freed at 1 ms is due at the fifth
  // simulated tick, 250 ms, after the log's last event (125 ms).
  const Replayer slower = run(logged_ticks(5), with_conf("idle_release_ms:200"));
  CHECK(slower.reserved_now() == 30 * kMiB);
  CHECK(slower.counts().idle_ticks_simulated == 2);  // at 50 and 100 ms
}

TEST_CASE("replay idle: without the log's ticks, ticks are simulated from the events' times") {
  // --conf idle_release_ms:100 on a log without idle release: a tick every 25 ms from the first
  // event (t = 0). a (30 MiB) is freed at 1 ms and never used again; b (12 MiB) is reused every
  // 50 ms.
  auto log_of = [](std::uint64_t end_ns) {
    std::string log = header("") + alloc(0, 0xa, 30 * kMiB) + alloc(0, 0xb, 12 * kMiB) +
                      free_(kMs, 0xa) + free_(2 * kMs, 0xb);
    for (std::uint64_t t = 50 * kMs; t + kMs <= end_ns; t += 50 * kMs) {
      log += alloc(t, 0xb, 12 * kMiB) + free_(t + kMs, 0xb);
    }
    // The last event: a free of a pointer never allocated (counted, changes nothing).
    log += free_(end_ns, 0xdead);
    return log;
  };

  // Up to 124.999 ms: four ticks (25 to 100 ms), a stays.
  const Replayer before = run(log_of(125 * kMs - 1), with_conf("idle_release_ms:100"));
  CHECK_FALSE(before.idle_ticks_from_log());
  CHECK(before.counts().idle_release_events == 0);
  CHECK(before.counts().idle_ticks_simulated == 4);
  CHECK(before.reserved_now() == 42 * kMiB);

  // At 125 ms, the fifth tick: a goes back, b (reused at 50 and 100 ms) stays.
  const Replayer at = run(log_of(125 * kMs), with_conf("idle_release_ms:100"));
  CHECK(at.counts().idle_ticks_simulated == 5);
  CHECK(at.reserved_now() == 12 * kMiB);
  CHECK(at.counts().idle_releases == 1);  // the fifth simulated tick, of five
  CHECK(at.counts().idle_released_bytes == 30 * kMiB);
  CHECK(stat(at, "num_device_free") == 1);

  // Much later, b still reused every 50 ms: it is never released.
  const Replayer later = run(log_of(2000 * kMs), with_conf("idle_release_ms:100"));
  CHECK(later.reserved_now() == 12 * kMiB);
  CHECK(stat(later, "num_device_free") == 1);
  CHECK(stat(later, "num_device_alloc") == 2);  // b's segment was never allocated again

  // Without the setting, nothing is simulated.
  const Replayer off = run(log_of(2000 * kMs));
  CHECK(off.counts().idle_ticks_simulated == 0);
  CHECK(off.reserved_now() == 42 * kMiB);
}

TEST_CASE("replay idle: a long gap between two events releases what was idle before it") {
  const std::string log = header("") + alloc(0, 0xa, 30 * kMiB) + free_(kMs, 0xa) +
                          alloc(3600ull * 1000 * kMs, 0xc, 2 * kMiB);  // an hour later
  const Replayer r = run(log, with_conf("idle_release_ms:100"));
  CHECK(stat(r, "num_device_free") == 1);
  CHECK(r.reserved_now() == 20 * kMiB);  // c's own new segment only
  // Only the ticks that could matter are run (the rest of the hour changes nothing).
  CHECK(r.counts().idle_ticks_simulated <= 6);
}

TEST_CASE("replay idle: HeldOverTime is the time-weighted mean of reserved memory") {
  // 1 GiB reserved from 0 to 1 s, then nothing until 2 s: a mean of 0.5 GiB over 2 s.
  const std::string log = header("") + alloc(0, 0x10, kGiB) + free_(1000 * kMs, 0x10) +
                          event(1000 * kMs, "empty_cache", 0, 0) +
                          event(2000 * kMs, "empty_cache", 0, 0);
  const Replayer r = run(log);
  CHECK(r.problems().empty());
  CHECK(r.held().first_t_ns == 0);
  CHECK(r.held().last_t_ns == 2000 * kMs);
  CHECK(r.held().span_ns() == 2000 * kMs);
  CHECK(r.reserved_now() == 0);
  CHECK(r.held().mean_reserved(r.reserved_now()) == Approx(0.5 * static_cast<double>(kGiB)));

  const nlohmann::json json = nlohmann::json::parse(json_report(r, 0.0));
  REQUIRE(json.contains("held"));
  CHECK(json["held"]["span_ns"] == 2000 * kMs);
  CHECK(json["held"]["mean_reserved_bytes"].get<double>() ==
        Approx(0.5 * static_cast<double>(kGiB)));
  CHECK(json["held"]["idle_ticks"] == "simulated");
  CHECK(json["counts"]["idle_release_events"] == 0);

  const std::string text = text_report(r, 0.0);
  INFO(text);
  CHECK(text.find("reserved over the log's 2 s: mean ") != std::string::npos);
}

TEST_CASE("replay idle: HeldOverTime of a log of one instant is the reserved memory now") {
  const Replayer r = run(header("") + alloc(5 * kMs, 0x10, 30 * kMiB));
  CHECK(r.held().span_ns() == 0);
  CHECK(r.held().mean_reserved(r.reserved_now()) == Approx(30.0 * kMiB));
}

TEST_CASE("replay idle: the mean counts what the simulated ticks released") {
  // a (30 MiB) from 0, freed at 1 ms, released by the tick at 125 ms; the log ends at 1 s.
  const std::string log =
      header("") + alloc(0, 0xa, 30 * kMiB) + free_(kMs, 0xa) + free_(1000 * kMs, 0xdead);
  const Replayer r = run(log, with_conf("idle_release_ms:100"));
  CHECK(r.reserved_now() == 0);
  CHECK(r.held().mean_reserved(0) == Approx(30.0 * kMiB * 0.125));
  const Replayer off = run(log);
  CHECK(off.held().mean_reserved(off.reserved_now()) == Approx(30.0 * kMiB));
}

TEST_CASE("replay idle: a dropped context's memory counts in the mean up to its drop") {
  // 1 GiB reserved from 0 until the context is dropped at 1 s; the log ends at 2 s.
  const std::string log = header("") + alloc(0, 0x10, kGiB) +
                          event(1000 * kMs, "context_dropped", 0, 0) + free_(2000 * kMs, 0xdead);
  const Replayer r = run(log);
  CHECK(r.counts().contexts_dropped == 1);
  CHECK(r.held().span_ns() == 2000 * kMs);
  CHECK(r.held().mean_reserved(r.reserved_now()) == Approx(0.5 * static_cast<double>(kGiB)));
}
