// tests/unit/test_pool_oom.cpp: what the pool records when a request fails (pool/oom.h), and the
// explanation: a real shortage, the cap of per_process_memory_fraction, fragmentation.
#include <string>

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
