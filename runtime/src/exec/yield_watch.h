// SPDX-License-Identifier: Apache-2.0
// Internal: when a waiting thread's sched_yield stops paying, because another process keeps the
// cores busy.
//
// Where threads outnumber cores, waiters yield before they sleep (futex.h, WaitPolicy): the
// threads they wait for run first, and no core idles. That pays only while the threads that run
// instead are this process's. While another process keeps the cores busy, each yield hands it a
// whole time slice (milliseconds), and a collective costs several: 8 devices on 2 cores beside
// two busy processes ran examples/legacy/heat_stencil (10,000 small collectives) in 21-32 s with
// yields, 2 s without, 0.3 s alone. So the waiters report every yield here, and yielding pauses
// (waiters go from spinning straight to their futex) while the yields show that load.
//
// A slow yield alone does not show it: this process's own threads take the core for as long when
// a body computes. A window with several slow yields starts probing instead: the next yields also
// measure the process's CPU time, which another process's slice does not advance.
//
//   YieldWatch watch;
//   bool probe = watch.probing();
//   ... time sched_yield(), and the process's CPU time around it when probe ...
//   if (watch.note(took, probe ? std::optional(cpu) : std::nullopt)) pause yielding a while
//
// Thread-safe without locks, shared by every waiter: races only move a decision by a yield or two.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>

namespace spmd::internal {

class YieldWatch {
 public:
  using Clock = std::chrono::steady_clock;

  // A yield slower than this ran somebody else's time slice: another process's, or one of this
  // process's threads computing. Over 1 ms took 0.1% of the yields of an 8-device
  // bench/jax_baseline_bench on an idle 2-core machine, 30% of those of heat_stencil beside two
  // busy processes (most over 3 ms).
  static constexpr Clock::duration kSlowYield = std::chrono::milliseconds(1);
  // kSlowToProbe slow yields among kWindow start probing the next kProbes yields.
  static constexpr int kWindow = 64;
  static constexpr int kSlowToProbe = 4;
  static constexpr int kProbes = 64;
  // A probed slow yield ran another process when this process's CPU time advanced by less than
  // half its time. Beside two busy processes, it advanced by under a quarter in 98 of 101 slow
  // yields; with bodies computing on an idle machine, by over 3/4 in 85% of them. kForeignToPause
  // such yields among the probes pause yielding.
  static constexpr int kForeignToPause = 2;
  // How long a pause lasts: seeing the load again (about six slow yields, 20 ms) is a small part
  // of it, and yielding comes back soon after the machine is quiet. (heat_stencil beside busy
  // loops took 1.4x its time without yields with 100 ms pauses, 0.9-1.0x with 300 ms.)
  static constexpr Clock::duration kPause = std::chrono::milliseconds(300);

  // Whether the next yield is to be probed (its process CPU time measured).
  bool probing() const { return probes_left_.load(std::memory_order_relaxed) > 0; }
  // Reports a yield that took `took`, and the process CPU time it saw if it was probed. Returns
  // whether yielding is to pause for kPause now.
  bool note(Clock::duration took, std::optional<Clock::duration> process_cpu);

 private:
  void count(bool slow);
  bool judge(Clock::duration took, Clock::duration process_cpu);

  std::atomic<int> yields_{0};       // yields in the current window
  std::atomic<int> slow_{0};         // slow ones among them
  std::atomic<int> probes_left_{0};  // yields still to probe
  std::atomic<int> foreign_{0};      // probed slow yields that ran another process
};

}  // namespace spmd::internal
