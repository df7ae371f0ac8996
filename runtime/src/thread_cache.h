// SPDX-License-Identifier: Apache-2.0
// Internal: per-thread free lists for the objects every eager op creates and drops (an array's
// impl, its buffer, their shared_ptr control blocks), so that a small op in a loop allocates
// nothing: malloc and free were a fifth of a 16-element `v * 2`.
//
//   using Cache = ThreadCache<Thing, 16, destroy<Thing>>;
//   Thing* t = Cache::take();  // null when empty
//   if (t == nullptr) t = new Thing(Cache::home());
//   ...
//   if (!Cache::give(t, t->home)) delete t;
//
// A cache keeps only objects its own thread made (their `home` is that thread's home()): the
// memory a thread writes for every op, the objects and the small allocations inside them, then
// stays in its own malloc arena. Objects made on one device thread and dropped on another (a
// body's outputs, freed by the caller) used to mix the threads' objects on shared cache lines:
// two devices running small ops at once were up to 1.6x slower per op than one, varying from run
// to run with the heap's layout. A full cache, or another thread's object, is refused and the
// caller destroys the object as usual. At thread exit a cache destroys what it holds with
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
  // Keeps `p`, made on the thread whose home() is `home`, for a later take() on this thread;
  // false when that is another thread or the cache is full (or gone).
  static bool give(T* p, const void* home) {
    List* list = of_thread();
    if (list == nullptr || list != home || list->count == kCapacity) return false;
    list->items[list->count++] = p;
    return true;
  }
  // This thread's identity for give() (its cache's address); null once its cache is gone. A thread
  // that starts after another ended may get the same address and so adopt the ended thread's
  // objects: harmless, for that one writes nothing any more.
  static const void* home() { return of_thread(); }

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

// Raw storage of one size, for allocators, and the thread that made it. Whole cache lines, as the
// reference counts in it change with every op.
template <size_t kBytes>
struct alignas(64) RawBlock {
  const void* home;
  alignas(std::max_align_t) unsigned char bytes[kBytes];
};

template <size_t kBytes>
RawBlock<kBytes>* new_block() {
  return static_cast<RawBlock<kBytes>*>(
      ::operator new (sizeof(RawBlock<kBytes>), std::align_val_t{alignof(RawBlock<kBytes>)}));
}

template <size_t kBytes>
void free_block(RawBlock<kBytes>* p) {
  ::operator delete (p, std::align_val_t{alignof(RawBlock<kBytes>)});
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
    if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
    Block* block = Cache::take();
    if (block == nullptr) {
      block = new_block<sizeof(T)>();
      block->home = Cache::home();
    }
    return reinterpret_cast<T*>(block->bytes);
  }
  void deallocate(T* p, size_t n) {
    if (n != 1) return ::operator delete(p);
    Block* block =
        reinterpret_cast<Block*>(reinterpret_cast<unsigned char*>(p) - offsetof(Block, bytes));
    if (!Cache::give(block, block->home)) free_block(block);
  }
  template <class U>
  bool operator==(const ThreadCachedAllocator<U>&) const {
    return true;
  }
};

}  // namespace spmd::internal
