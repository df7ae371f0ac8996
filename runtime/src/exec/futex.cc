// SPDX-License-Identifier: Apache-2.0
// The waiting primitives of futex.h: Linux futex syscalls, and a yield that notices when other
// processes take the cores.
#include "exec/futex.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <thread>

#include "exec/yield_watch.h"

namespace spmd::internal {
namespace {

// Yields before sleeping when threads outnumber cores; tuned with bench/collectives_bench.
int yields_from_env() {
  const char* text = std::getenv("SPMD_WAIT_YIELDS");
  return text != nullptr ? std::atoi(text) : 64;
}
const int kOversubscribedYields = yields_from_env();

using Clock = YieldWatch::Clock;

// Every waiter's yields, and until when yielding is paused (steady_clock ticks).
YieldWatch yield_watch;
std::atomic<Clock::rep> yields_paused_until{0};

Clock::duration process_cpu_time() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

uint32_t* address(const std::atomic<uint32_t>& word) {
  static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));
  return reinterpret_cast<uint32_t*>(const_cast<std::atomic<uint32_t>*>(&word));
}

}  // namespace

bool futex_wait(const std::atomic<uint32_t>& word, uint32_t expected,
                std::chrono::nanoseconds timeout) {
  if (timeout.count() <= 0) return false;
  timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1'000'000'000);
  ts.tv_nsec = static_cast<long>(timeout.count() % 1'000'000'000);
  long rc = syscall(SYS_futex, address(word), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
  return !(rc == -1 && errno == ETIMEDOUT);
}

void futex_wake_all(const std::atomic<uint32_t>& word) {
  syscall(SYS_futex, address(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

bool yield_unless_slow() {
  const Clock::time_point start = Clock::now();
  if (start.time_since_epoch().count() < yields_paused_until.load(std::memory_order_relaxed))
    return false;
  const bool probe = yield_watch.probing();
  const Clock::duration cpu_start = probe ? process_cpu_time() : Clock::duration();
  std::this_thread::yield();
  const Clock::time_point end = Clock::now();
  std::optional<Clock::duration> cpu;
  if (probe) cpu = process_cpu_time() - cpu_start;
  if (!yield_watch.note(end - start, cpu)) return true;
  yields_paused_until.store((end + YieldWatch::kPause).time_since_epoch().count(),
                            std::memory_order_relaxed);
  return false;
}

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

WaitPolicy wait_policy(int threads) {
  static const int cores = available_cores();
  if (threads <= cores) return WaitPolicy{4000, 0};
  return WaitPolicy{16, kOversubscribedYields};
}

}  // namespace spmd::internal
