// SPDX-License-Identifier: Apache-2.0
// Internal: per-thread free lists for the objects every eager op creates and drops (an array's
// impl, its buffer, their shared_ptr control blocks), so that a small op in a loop allocates
// nothing: malloc and free were a fifth of a 16-element `v * 2`.
//
//   using Cache = ThreadCache<Buffer, 16, destroy<Buffer>>;
//   Buffer* b = Cache::take();  // null when empty
//   ...
//   if (!Cache::give(b)) delete b;
//
// An object goes to the cache of the thread that gives it back (the one dropping its last
// reference), so each cache is bounded (kCapacity) rather than balanced; a full cache refuses and
// the caller destroys the object as usual. At thread exit a cache destroys what it holds with
// `dispose`, and refuses everything after.
#pragma once

#include <cstddef>
#include <new>

namespace spmd::internal {

template <class T>
void destroy(T* p) {
  delete p;
}

template <class T, size_t kCapacity, void (*dispose)(T*)>
class ThreadCache {
 public:
  // An object given back earlier on this thread, or null.
  static T* take() {
    List* list = of_thread();
    if (list == nullptr || list->count == 0) return nullptr;
    return list->items[--list->count];
  }
  // The most recently given object for which pred(object) holds, or null.
  template <class Pred>
  static T* take_if(Pred pred) {
    List* list = of_thread();
    if (list == nullptr) return nullptr;
    for (size_t i = list->count; i-- > 0;) {
      T* p = list->items[i];
      if (!pred(*p)) continue;
      list->items[i] = list->items[--list->count];
      return p;
    }
    return nullptr;
  }
  // Keeps `p` for a later take() on this thread; false when the cache is full (or gone).
  static bool give(T* p) {
    List* list = of_thread();
    if (list == nullptr || list->count == kCapacity) return false;
    list->items[list->count++] = p;
    return true;
  }

 private:
  struct List {
    T* items[kCapacity];
    size_t count = 0;
    ~List() {
      gone = true;
      while (count > 0) dispose(items[--count]);
    }
  };
  static List* of_thread() {
    if (gone) return nullptr;
    thread_local List list;
    return &list;
  }
  static inline thread_local bool gone = false;
};

// Raw storage of one size, for allocators.
template <size_t kBytes>
struct RawBlock {
  alignas(std::max_align_t) unsigned char bytes[kBytes];
};

template <size_t kBytes>
void free_block(RawBlock<kBytes>* p) {
  ::operator delete(p);
}

// A std::allocator stand-in that keeps freed single objects per thread: for the control blocks
// of shared_ptrs made with a deleter (std::shared_ptr<T>(p, deleter, ThreadCachedAllocator<T>())).
template <class T>
struct ThreadCachedAllocator {
  using value_type = T;
  using Block = RawBlock<sizeof(T)>;
  using Cache = ThreadCache<Block, 64, free_block<sizeof(T)>>;

  ThreadCachedAllocator() = default;
  template <class U>
  ThreadCachedAllocator(const ThreadCachedAllocator<U>&) {}  // NOLINT(google-explicit-constructor)

  T* allocate(size_t n) {
    if (n == 1) {
      if (Block* block = Cache::take()) return reinterpret_cast<T*>(block);
      return reinterpret_cast<T*>(::operator new(sizeof(Block)));
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) {
    if (n == 1 && Cache::give(reinterpret_cast<Block*>(p))) return;
    ::operator delete(p);
  }
  template <class U>
  bool operator==(const ThreadCachedAllocator<U>&) const {
    return true;
  }
};

}  // namespace spmd::internal
