// SPDX-License-Identifier: Apache-2.0
// Internal: the blocking primitive under every wait in spmd (collectives, dispatch, completion).
// Linux futexes on std::atomic<uint32_t> words, so a waiter can sleep with a deadline and be woken
// by a single store+wake, with no mutex on the fast path.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace spmd::internal {

// Sleeps while *word == expected, at most `timeout`. Returns false on timeout; spurious returns
// are possible, so callers re-check their condition.
bool futex_wait(const std::atomic<uint32_t>& word, uint32_t expected,
                std::chrono::nanoseconds timeout);
// Wakes every thread sleeping on `word`.
void futex_wake_all(const std::atomic<uint32_t>& word);

// A futex word plus a count of sleepers, so that wakers skip the syscall when nobody sleeps.
struct WaitWord {
  std::atomic<uint32_t> word{0};
  std::atomic<int> sleepers{0};
  // Wakes every sleeper; call after changing `word` (the seq_cst store orders against `sleepers`).
  void wake() {
    if (sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(word);
  }
  // Sleeps while word == expected (see futex_wait).
  bool sleep(uint32_t expected, std::chrono::nanoseconds timeout) {
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    bool woke =
        word.load(std::memory_order_seq_cst) != expected || futex_wait(word, expected, timeout);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    return woke;
  }
};

// A hint to the core that this thread is spinning.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Cores this process may run on (its CPU affinity), at least 1.
int available_cores();

// How a waiter waits before it sleeps on a futex, when `threads` threads compete for the cores.
// Spinning only pays while every thread has a core of its own; with more threads than cores a
// spinning waiter steals the time slice of the thread it waits for (16 ms per call at 8 threads on
// 2 cores, measured). Yielding instead keeps the waiter runnable without stealing: the threads it
// waits for run first, and the core never idles, which on a VM avoids the expensive wake-up of a
// halted virtual CPU that a futex sleep/wake pair costs. Only then does the waiter sleep.
struct WaitPolicy {
  int spins = 0;   // cpu_relax iterations
  int yields = 0;  // sched_yield calls after spinning
};
WaitPolicy wait_policy(int threads);

// Yields the core once, unless yielding is paused; returns false when it is (before or after this
// yield). Yielding pauses for a while when the yields show that another process keeps the cores
// busy (yield_watch.h).
bool yield_unless_slow();

// Spins, then yields, per `policy`, until done() holds; returns done()'s final value.
template <class Done>
bool spin_then_yield(const WaitPolicy& policy, Done&& done) {
  for (int i = 0; i < policy.spins; ++i) {
    if (done()) return true;
    cpu_relax();
  }
  for (int i = 0; i < policy.yields; ++i) {
    if (done()) return true;
    if (!yield_unless_slow()) break;
  }
  return done();
}

}  // namespace spmd::internal
