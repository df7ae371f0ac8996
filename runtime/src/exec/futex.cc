// SPDX-License-Identifier: Apache-2.0
// Linux futex syscalls for futex.h.
#include "exec/futex.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <thread>

namespace spmd::internal {
namespace {

// Yields before sleeping when threads outnumber cores; tuned with bench/collectives_bench.
int yields_from_env() {
  const char* text = std::getenv("SPMD_WAIT_YIELDS");
  return text != nullptr ? std::atoi(text) : 64;
}
const int kOversubscribedYields = yields_from_env();

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
