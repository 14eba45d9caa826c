// SPDX-License-Identifier: Apache-2.0
// pool/node_cache.h: recycling of small fixed-size objects (blocks, ordered-set nodes) so that the
// steady state of the pool allocates nothing from the heap. Not thread-safe: one per device pool,
// used under that pool's lock. Objects still handed out when the cache dies are the owner's to
// return first.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

namespace cudapool::pool {

class NodeCache {
 public:
  NodeCache() = default;
  NodeCache(const NodeCache&) = delete;
  NodeCache& operator=(const NodeCache&) = delete;
  ~NodeCache() { trim(); }

  // Gives every cached node back to the heap.
  void trim() {
    while (head_ != nullptr) {
      FreeNode* next = head_->next;
      ::operator delete(static_cast<void*>(head_));
      head_ = next;
    }
  }

  void* get(std::size_t bytes) {
    if (bytes < sizeof(FreeNode)) bytes = sizeof(FreeNode);
    if (node_bytes_ == 0) node_bytes_ = bytes;
    if (bytes != node_bytes_) return ::operator new(bytes);  // a second size: not cached
    if (head_ == nullptr) return ::operator new(bytes);
    FreeNode* node = head_;
    head_ = node->next;
    return node;
  }

  void put(void* p, std::size_t bytes) {
    if (bytes < sizeof(FreeNode)) bytes = sizeof(FreeNode);
    if (bytes != node_bytes_) {
      ::operator delete(p);
      return;
    }
    auto* node = static_cast<FreeNode*>(p);
    node->next = head_;
    head_ = node;
  }

 private:
  struct FreeNode {
    FreeNode* next;
  };
  FreeNode* head_ = nullptr;
  std::size_t node_bytes_ = 0;
};

// A standard allocator over a NodeCache, for node-based containers (std::set).
template <class T>
class CachingAllocator {
 public:
  using value_type = T;
  explicit CachingAllocator(NodeCache* cache) noexcept : cache_(cache) {}
  template <class U>
  CachingAllocator(const CachingAllocator<U>& other) noexcept : cache_(other.cache()) {}

  T* allocate(std::size_t n) {
    if (n == 1) return static_cast<T*>(cache_->get(sizeof(T)));
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n == 1) {
      cache_->put(p, sizeof(T));
    } else {
      ::operator delete(p);
    }
  }
  NodeCache* cache() const noexcept { return cache_; }
  template <class U>
  bool operator==(const CachingAllocator<U>& other) const noexcept {
    return cache_ == other.cache();
  }

 private:
  NodeCache* cache_;
};

// Typed construction and destruction of objects on a NodeCache.
template <class T, class... Args>
T* make_cached(NodeCache& cache, Args&&... args) {
  return new (cache.get(sizeof(T))) T(std::forward<Args>(args)...);
}

template <class T>
void destroy_cached(NodeCache& cache, T* object) {
  object->~T();
  cache.put(object, sizeof(T));
}

}  // namespace cudapool::pool
