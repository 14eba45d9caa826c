// SPDX-License-Identifier: Apache-2.0
// tests/unit/test_pool_oom.cpp: what the pool records when a request fails (pool/oom.h), and the
// explanation: a real shortage, the cap of per_process_memory_fraction, fragmentation, a setting
// that made the segment or the block larger than the memory left; and a device error other than
// out-of-memory (pool/refusal.h).
#include <string>
#include <vector>

#include "pool/oom.h"
#include "tests/unit/catch.h"
#include "tests/unit/pool_test_util.h"

using namespace pooltest;
using cudapool::pool::explain_oom;
using cudapool::pool::oom_cause_name;
using cudapool::pool::OomCause;
using cudapool::pool::OomState;

TEST_CASE("oom: a real shortage is named as one") {
  Harness h(64 * kMiB);
  h.alloc(40 * kMiB);
  const AllocResult r = h.try_alloc(40 * kMiB);
  REQUIRE(r.status == AllocStatus::kOutOfMemory);
  const OomState& s = h.pool.last_oom();
  CHECK(s.requested == 40 * kMiB);
  CHECK(s.rounded == 40 * kMiB);
  CHECK(s.segment_size == 40 * kMiB);
  CHECK(s.device_total == 64 * kMiB);
  CHECK(s.device_free == 24 * kMiB);
  CHECK(s.cap == 0);
  CHECK(s.reserved == 40 * kMiB);
  CHECK(s.allocated == 40 * kMiB);
  CHECK(s.free_blocks == 0);
  CHECK(s.cause == OomCause::kShortage);
  const std::string text = explain_oom(s, 0);
  CHECK(text.find("out of memory on device 0: tried to allocate 40.00 MiB") != std::string::npos);
  CHECK(text.find("64.00 MiB total, 24.00 MiB free") != std::string::npos);
  CHECK(text.find("the program holds 40.00 MiB") != std::string::npos);
  for (std::size_t p = 0; (p = text.find('\n', p)) != std::string::npos; ++p) {
    if (p + 1 < text.size()) CHECK(text.compare(p + 1, 10, "cudapool: ") == 0);
  }
}

TEST_CASE("oom: the cap of per_process_memory_fraction, and the fraction that would do") {
  cudapool::config::Options o;
  o.per_process_memory_fraction = 0.5;
  Harness h(1024 * kMiB, o);
  h.pool.set_memory_fraction(0.5);
  h.alloc(400 * kMiB);
  const AllocResult r = h.try_alloc(200 * kMiB);
  REQUIRE(r.status == AllocStatus::kOutOfMemory);
  const OomState& s = h.pool.last_oom();
  CHECK(s.cap == 512 * kMiB);
  CHECK(s.cause == OomCause::kCap);
  const std::string text = explain_oom(s, 1);
  CHECK(text.find("cap 512.00 MiB (per_process_memory_fraction)") != std::string::npos);
  CHECK(text.find("Raise per_process_memory_fraction to at least 0.59") != std::string::npos);
  CHECK(oom_cause_name(s.cause) == "cap");
}

TEST_CASE("oom: fragmentation, with the free blocks and the largest one") {
  // Two 20 MiB segments of three 6 MiB blocks each; two blocks of each freed: 28 MiB reserved but
  // unallocated, the largest free piece 14 MiB. 25 MiB fits nowhere, and the device has 20 MiB.
  Harness h(60 * kMiB);
  std::uintptr_t b[6];
  for (auto& p : b) p = h.alloc(6 * kMiB);
  CHECK(h.pool.reserved_bytes() == 40 * kMiB);
  for (int i : {1, 2, 4, 5}) h.free(b[i]);
  const AllocResult r = h.try_alloc(25 * kMiB);
  REQUIRE(r.status == AllocStatus::kOutOfMemory);
  const OomState& s = h.pool.last_oom();
  CHECK(s.reserved == 40 * kMiB);
  CHECK(s.allocated == 12 * kMiB);
  CHECK(s.free_blocks == 2);
  CHECK(s.largest_free_block == 14 * kMiB);
  CHECK(s.cause == OomCause::kFragmentation);
  const std::string text = explain_oom(s, 0);
  CHECK(text.find(
            "28.00 MiB reserved but unallocated in 2 free cached blocks (the largest 14.00 MiB)") !=
        std::string::npos);
  CHECK(text.find("Try expandable_segments:True") != std::string::npos);
  CHECK(text.find("cudapool tune") != std::string::npos);
}

TEST_CASE("oom: a request beyond any device is a shortage with nothing rounded") {
  Harness h(64 * kMiB);
  const AllocResult r = h.try_alloc(~std::size_t{0} - 10);
  REQUIRE(r.status == AllocStatus::kOutOfMemory);
  CHECK(h.pool.last_oom().rounded == 0);
  CHECK(h.pool.last_oom().cause == OomCause::kShortage);
  CHECK(h.stats().num_ooms == 1);
}

TEST_CASE("oom: a large_segment_size_mb above the free memory is named, with the value that fits") {
  // Issue 26 item 8: a 5 MiB block gets a segment of large_segment_size (512 MiB) on a 256 MiB
  // device; the explanation blamed a shortage and said no setting helps.
  Options o;
  o.large_segment_size = 512 * kMiB;
  Harness h(256 * kMiB, o);
  const AllocResult r = h.try_alloc(5 * kMiB);
  REQUIRE(r.status == AllocStatus::kOutOfMemory);
  const OomState& s = h.pool.last_oom();
  CHECK(s.segment_size == 512 * kMiB);
  CHECK(s.device_free == 256 * kMiB);
  CHECK(s.cause == OomCause::kLargeSegmentSize);
  CHECK(oom_cause_name(s.cause) == "large_segment_size");
  const std::string text = explain_oom(s, 0);
  INFO(text);
  CHECK(text.find("cudapool:   why: a setting: large_segment_size_mb:512 made the pool ask for "
                  "512.00 MiB for a block of 5.00 MiB, and 256.00 MiB was free. Set "
                  "large_segment_size_mb to at most 256, or leave it unset (20)\n") !=
        std::string::npos);
  CHECK(text.find("no setting") == std::string::npos);
  // The policy is PyTorch's: no retry with a smaller segment; a block of 10 MiB or more is not
  // concerned (its segment is its own size).
  CHECK(h.stats().num_device_alloc == 0);
  CHECK(h.try_alloc(12 * kMiB).status == AllocStatus::kOk);
}

TEST_CASE("oom: the default segment of 20 MiB too is named when a smaller one would fit") {
  Harness h(64 * kMiB);
  h.alloc(48 * kMiB);  // a 48 MiB segment: 16 MiB left
  REQUIRE(h.try_alloc(5 * kMiB).status == AllocStatus::kOutOfMemory);
  const OomState& s = h.pool.last_oom();
  CHECK(s.cause == OomCause::kLargeSegmentSize);
  const std::string text = explain_oom(s, 0);
  INFO(text);
  CHECK(text.find("large_segment_size_mb:20 made the pool ask for 20.00 MiB for a block of 5.00 "
                  "MiB, and 16.00 MiB was free. Set large_segment_size_mb to at most 16\n") !=
        std::string::npos);
}

TEST_CASE("oom: when no large_segment_size_mb of 12 MiB or more fits, it is a shortage") {
  Harness h(64 * kMiB);
  h.alloc(54 * kMiB);  // 10 MiB left: no value (at least 11, 12 with expandable segments) fits
  REQUIRE(h.try_alloc(5 * kMiB).status == AllocStatus::kOutOfMemory);
  CHECK(h.pool.last_oom().cause == OomCause::kShortage);
}

TEST_CASE("oom: under a cap, large_segment_size_mb is held to what the cap leaves") {
  Options o;
  o.large_segment_size = 200 * kMiB;
  o.per_process_memory_fraction = 0.5;
  Harness h(256 * kMiB, o);
  REQUIRE(h.try_alloc(5 * kMiB).status == AllocStatus::kOutOfMemory);
  const OomState& s = h.pool.last_oom();
  CHECK(s.segment_size == 200 * kMiB);
  CHECK(s.cause == OomCause::kLargeSegmentSize);
  const std::string text = explain_oom(s, 0);
  INFO(text);
  CHECK(text.find("and 128.00 MiB was free under the cap (per_process_memory_fraction). Set "
                  "large_segment_size_mb to at most 128, or leave it unset (20)\n") !=
        std::string::npos);
}

TEST_CASE("oom: roundup_power2_divisions that round past the free memory are named") {
  Options o;
  o.roundup_power2_divisions.fill(2);  // 150 MiB -> 192 MiB
  Harness h(180 * kMiB, o);
  REQUIRE(h.try_alloc(150 * kMiB).status == AllocStatus::kOutOfMemory);
  const OomState& s = h.pool.last_oom();
  CHECK(s.rounded == 192 * kMiB);
  CHECK(s.segment_size == 192 * kMiB);
  CHECK(s.cause == OomCause::kRoundup);
  CHECK(oom_cause_name(s.cause) == "roundup");
  const std::string text = explain_oom(s, 0);
  INFO(text);
  CHECK(text.find("why: a setting: roundup_power2_divisions rounded 150.00 MiB up to a block of "
                  "192.00 MiB, and 180.00 MiB was free, enough for the request itself (150.00 "
                  "MiB). Use at least 4 divisions for sizes from 128.00 MiB (list entry 128:4), "
                  "or leave roundup_power2_divisions unset\n") != std::string::npos);
  // The advice holds: with 4 divisions the request fits.
  o.roundup_power2_divisions.fill(4);
  Harness fixed(180 * kMiB, o);
  CHECK(fixed.try_alloc(150 * kMiB).status == AllocStatus::kOk);
}

TEST_CASE("oom: a device error other than out-of-memory is recorded and logged, not an oom") {
  EventLog log;
  Harness h(64 * kMiB, Options{}, &log);
  h.backend.fail_next_allocations(1, cudapool::pool::BackendStatus::kError, 999);
  const AllocResult r = h.try_alloc(5 * kMiB);
  REQUIRE(r.status == AllocStatus::kBackendError);
  CHECK(r.backend_error == 999);
  CHECK(h.stats().num_ooms == 0);
  REQUIRE(log.names() == std::vector<std::string>{"alloc_failed"});
  CHECK(log.events[0].size == 5 * kMiB);
  CHECK(log.events[0].block_size == 5 * kMiB);
  CHECK(log.events[0].error == 999);
  const cudapool::pool::DeviceRefusal& f = h.pool.last_refusal();
  CHECK(f.step == cudapool::pool::RefusalStep::kSegment);
  CHECK(f.bytes == 20 * kMiB);
  CHECK(cudapool::pool::explain_refusal(f, 0, "CUDA_ERROR_X") ==
        "cudapool: allocation failed on device 0: the driver refused a new segment of 20.00 MiB, "
        "for a block of 5.00 MiB, with error 999 (CUDA_ERROR_X); the program's request of 5.00 "
        "MiB gets that error\n");
  CHECK(h.try_alloc(5 * kMiB).status == AllocStatus::kOk);  // the next one is served
}
