// SPDX-License-Identifier: Apache-2.0
// tests/gpu/two_devices.cu: two GPUs in one process. The shim keeps a pool per context (one per
// device here) and routes a free by its pointer, whatever device is current. Checks, each by data:
// blocks on both devices stay intact; a block of device 1 freed while device 0 is current goes back
// to device 1's pool (device 1's next allocation of that size gets the same address, and device 0's
// blocks are untouched); peer copies between pooled blocks; pointer attributes name the right
// device from either side; cudaMemGetInfo of each device counts that device only; one thread per
// device allocating at once; cudaDeviceReset of device 1 leaves device 0's pool and blocks alone,
// and device 1 allocates again afterwards. Prints "two_devices: skipped" and exits 0 with fewer
// than two devices. Exit status 0 when every check passed.
#include <thread>
#include <vector>

#include "common.h"

namespace {

int g_failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    printf("CHECK-FAIL %s\n", what);
    ++g_failures;
  }
}

// Words of [p, p + bytes) on the current device that differ from the seed's pattern.
unsigned long long bad_words(const void* p, std::size_t bytes, std::uint32_t seed) {
  unsigned long long* d_errors = nullptr;
  CHECK(cudaMalloc(&d_errors, sizeof *d_errors));
  CHECK(cudaMemset(d_errors, 0, sizeof *d_errors));
  check_async(p, bytes, seed, d_errors);
  const unsigned long long bad = read_counter(d_errors);
  CHECK(cudaFree(d_errors));
  return bad;
}

struct Block {
  int device;
  void* ptr;
  std::size_t bytes;
  std::uint32_t seed;
};

const std::size_t kSizes[] = {512, 4096, 1 << 20, 3 << 20, 24 << 20};

std::vector<Block> make_blocks(int device, std::uint32_t seed_base) {
  CHECK(cudaSetDevice(device));
  std::vector<Block> blocks;
  std::uint32_t seed = seed_base;
  for (std::size_t bytes : kSizes) {
    Block b{device, nullptr, bytes, seed++};
    CHECK(cudaMalloc(&b.ptr, bytes));
    fill_async(b.ptr, bytes, b.seed);
    blocks.push_back(b);
  }
  CHECK(cudaDeviceSynchronize());
  return blocks;
}

bool intact(const std::vector<Block>& blocks) {
  bool ok = true;
  for (const Block& b : blocks) {
    CHECK(cudaSetDevice(b.device));
    ok = ok && bad_words(b.ptr, b.bytes, b.seed) == 0;
  }
  return ok;
}

// Copies block b into a new pooled block on device `to` (cudaMemcpyPeer) and checks the copy there.
bool peer_copy_intact(const Block& b, int to) {
  CHECK(cudaSetDevice(to));
  void* copy = nullptr;
  CHECK(cudaMalloc(&copy, b.bytes));
  CHECK(cudaMemcpyPeer(copy, to, b.ptr, b.device, b.bytes));
  const bool ok = bad_words(copy, b.bytes, b.seed) == 0;
  CHECK(cudaFree(copy));
  return ok;
}

// One thread per device: pairs of allocations, each filled and checked before its free.
void churn(int device, int pairs, int* failures) {
  CHECK(cudaSetDevice(device));
  unsigned long long* d_errors = nullptr;
  CHECK(cudaMalloc(&d_errors, sizeof *d_errors));
  CHECK(cudaMemset(d_errors, 0, sizeof *d_errors));
  for (int i = 0; i < pairs; ++i) {
    const std::size_t bytes = kSizes[i % 5];
    void* p = nullptr;
    CHECK(cudaMalloc(&p, bytes));
    fill_async(p, bytes, 7000 + device * 1000 + i);
    check_async(p, bytes, 7000 + device * 1000 + i, d_errors);
    CHECK(cudaFree(p));
  }
  if (read_counter(d_errors) != 0) ++*failures;
  CHECK(cudaFree(d_errors));
}

}  // namespace

int main() {
  print_banner("two_devices");
  int count = 0;
  CHECK(cudaGetDeviceCount(&count));
  if (count < 2) {
    printf("two_devices: skipped: %d device(s)\n", count);
    return 0;
  }
  std::vector<Block> dev0 = make_blocks(0, 100);
  std::vector<Block> dev1 = make_blocks(1, 200);
  expect(intact(dev0) && intact(dev1), "blocks on both devices intact after allocation");

  // A free of device 1's block while device 0 is current goes to device 1's pool.
  const Block moved = dev1[2];  // 1 MiB
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(moved.ptr));
  dev1.erase(dev1.begin() + 2);
  expect(intact(dev0), "device 0's blocks intact after freeing a device-1 block from device 0");
  CHECK(cudaSetDevice(1));
  void* again = nullptr;
  CHECK(cudaMalloc(&again, moved.bytes));
  cudaPointerAttributes attr{};
  CHECK(cudaPointerGetAttributes(&attr, again));
  expect(attr.device == 1, "device 1's new block is on device 1");
  const bool reused = again == moved.ptr;
  printf("two_devices: device 1 block freed from device 0, device 1's next 1 MiB block %s\n",
         reused ? "got the same address (back in device 1's pool)" : "got another address");
  fill_async(again, moved.bytes, 300);
  CHECK(cudaDeviceSynchronize());
  dev1.push_back(Block{1, again, moved.bytes, 300});

  // Pointer attributes of either device's block, from either side.
  for (int current = 0; current < 2; ++current) {
    CHECK(cudaSetDevice(current));
    for (const Block* b : {&dev0[3], &dev1[3]}) {
      CHECK(cudaPointerGetAttributes(&attr, b->ptr));
      expect(attr.device == b->device && attr.type == cudaMemoryTypeDevice,
             "pointer attributes name the block's own device");
    }
  }

  // Peer copies between pooled blocks (staged by the driver when peer access is off).
  expect(peer_copy_intact(dev1[3], 0), "peer copy device 1 -> 0");
  expect(peer_copy_intact(dev0[4], 1), "peer copy device 0 -> 1");

  // cudaMemGetInfo per device: freeing device 1's 24 MiB block raises device 1's free memory only.
  std::size_t free0_before = 0, free1_before = 0, free0_after = 0, free1_after = 0, total = 0;
  CHECK(cudaSetDevice(0));
  CHECK(cudaMemGetInfo(&free0_before, &total));
  CHECK(cudaSetDevice(1));
  CHECK(cudaMemGetInfo(&free1_before, &total));
  const Block big = dev1[3];  // 24 MiB
  CHECK(cudaFree(big.ptr));
  dev1.erase(dev1.begin() + 3);
  CHECK(cudaMemGetInfo(&free1_after, &total));
  CHECK(cudaSetDevice(0));
  CHECK(cudaMemGetInfo(&free0_after, &total));
  printf(
      "two_devices: after freeing 24 MiB on device 1: device 1 free +%lld B, device 0 free "
      "%+lld B\n",
      static_cast<long long>(free1_after) - static_cast<long long>(free1_before),
      static_cast<long long>(free0_after) - static_cast<long long>(free0_before));
  expect(free1_after >= free1_before + big.bytes, "device 1's free memory counts the freed block");
  expect(free0_after + (4u << 20) >= free0_before && free0_after <= free0_before + (4u << 20),
         "device 0's free memory did not move with device 1's free");

  // One thread per device at once.
  int thread_failures = 0;
  {
    std::thread t0(churn, 0, 400, &thread_failures);
    std::thread t1(churn, 1, 400, &thread_failures);
    t0.join();
    t1.join();
  }
  expect(thread_failures == 0, "threads on both devices: every block held its data");
  expect(intact(dev0) && intact(dev1), "kept blocks intact after the threads");

  // Resetting device 1 drops its pool only.
  CHECK(cudaSetDevice(1));
  CHECK(cudaDeviceReset());
  dev1.clear();
  expect(intact(dev0), "device 0's blocks intact after device 1 was reset");
  CHECK(cudaSetDevice(1));
  std::vector<Block> dev1_after = make_blocks(1, 400);
  expect(intact(dev1_after), "device 1 allocates again after its reset");
  for (const Block& b : dev1_after) CHECK(cudaFree(b.ptr));
  CHECK(cudaSetDevice(0));
  for (const Block& b : dev0) CHECK(cudaFree(b.ptr));
  printf("two_devices: %d devices, %d failed checks\n", count, g_failures);
  return g_failures == 0 ? 0 : 1;
}
