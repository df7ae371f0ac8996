// SPDX-License-Identifier: Apache-2.0
#include "exec/yield_watch.h"

namespace spmd::internal {

bool YieldWatch::note(Clock::duration took, std::optional<Clock::duration> process_cpu) {
  if (process_cpu) return judge(took, *process_cpu);
  count(took >= kSlowYield);
  return false;
}

void YieldWatch::count(bool slow) {
  if (yields_.fetch_add(1, std::memory_order_relaxed) + 1 >= kWindow) {
    yields_.store(0, std::memory_order_relaxed);
    slow_.store(0, std::memory_order_relaxed);
  }
  if (!slow || slow_.fetch_add(1, std::memory_order_relaxed) + 1 < kSlowToProbe) return;
  yields_.store(0, std::memory_order_relaxed);
  slow_.store(0, std::memory_order_relaxed);
  foreign_.store(0, std::memory_order_relaxed);
  probes_left_.store(kProbes, std::memory_order_relaxed);
}

bool YieldWatch::judge(Clock::duration took, Clock::duration process_cpu) {
  probes_left_.fetch_sub(1, std::memory_order_relaxed);
  if (took < kSlowYield || process_cpu >= took / 2) return false;
  if (foreign_.fetch_add(1, std::memory_order_relaxed) + 1 < kForeignToPause) return false;
  probes_left_.store(0, std::memory_order_relaxed);
  return true;
}

}  // namespace spmd::internal
