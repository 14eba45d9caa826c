// SPDX-License-Identifier: Apache-2.0
// pool/block.h: a block is a run of bytes inside a segment: handed out, cached, or (in an
// expandable segment) not backed by memory yet. Blocks of one segment form a doubly linked list in
// address order. Plain data; the policy that moves blocks around is in device_pool.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cudapool::pool {

struct BlockPool;
struct ExpandableSegment;

struct Block {
  std::uintptr_t ptr = 0;
  std::size_t size = 0;
  std::size_t requested_size = 0;  // what the program asked for, while allocated
  std::uintptr_t stream = 0;
  std::uintptr_t segment = 0;  // base address of the segment the block lies in
  BlockPool* pool = nullptr;
  Block* prev = nullptr;
  Block* next = nullptr;
  ExpandableSegment* expandable = nullptr;
  std::uint64_t fence = 0;         // reuse fence still pending after a free; 0 when none
  std::int64_t gc_count_base = 0;  // pool's lookup count when the block was cached (GC age)
  // Who allocated the block (set by the caller of malloc, for leak reports; 0 when unknown).
  std::uint64_t alloc_seq = 0;
  std::uint64_t alloc_t_ns = 0;
  std::uint32_t alloc_tid = 0;    // a gettid() (pid_max <= 2^22)
  std::uint32_t alloc_stack = 0;  // an opaque id of the caller's stack (the shim's Python stack)
  // While allocated: an opaque word of the pool's user (the shim's thread cache that tracks the
  // block); the pool never reads it.
  std::uintptr_t holder = 0;
  bool allocated = false;
  bool mapped = true;  // false only for unbacked address space of an expandable segment
  std::uint32_t slot =
      0;  // while allocated in a pool tracked by handle: its slot (allocated_blocks.h)
  // While cached: the pool's idle-release tick count when the block was last cached (its bytes
  // last used); idle release measures idleness in ticks from it (device_pool_idle.cpp).
  std::uint32_t idle_tick = 0;

  bool is_split() const { return prev != nullptr || next != nullptr; }
  std::uintptr_t end() const { return ptr + size; }
};

// A Block with every field at its default. New blocks and search keys are copied from it: GCC
// zeroes a value-initialized Block with `rep stos`, about a tenth of a cached pair's time, and a
// copy of a constant is a few vector stores.
inline constexpr Block kFreshBlock{};

}  // namespace cudapool::pool
