// SPDX-License-Identifier: Apache-2.0
// YieldWatch's decisions, fed with yield times: when yielding pauses (another process's load) and
// when it does not (quick yields, this process's own threads computing).
#include "exec/yield_watch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

namespace spmd::internal {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
constexpr auto kQuick = microseconds(5);
constexpr auto kSlow = milliseconds(3);

// Reports `n` yields of `took` as the waiters do (probing when asked, with `cpu_share` of the
// yield's time as the process's CPU time); returns how many of them paused yielding.
int feed(YieldWatch& watch, int n, YieldWatch::Clock::duration took, double cpu_share) {
  int pauses = 0;
  for (int i = 0; i < n; ++i) {
    std::optional<YieldWatch::Clock::duration> cpu;
    if (watch.probing())
      cpu = std::chrono::duration_cast<YieldWatch::Clock::duration>(took * cpu_share);
    pauses += watch.note(took, cpu) ? 1 : 0;
  }
  return pauses;
}

TEST(YieldWatch, QuickYieldsNeverProbeOrPause) {
  YieldWatch watch;
  EXPECT_EQ(feed(watch, 10000, kQuick, 0.0), 0);
  EXPECT_FALSE(watch.probing());
}

TEST(YieldWatch, SlicesOfAnotherProcessPauseYielding) {
  YieldWatch watch;
  // Three slow yields in a window only count; the fourth starts probing.
  EXPECT_EQ(feed(watch, YieldWatch::kSlowToProbe - 1, kSlow, 0.1), 0);
  EXPECT_FALSE(watch.probing());
  EXPECT_EQ(feed(watch, 1, kSlow, 0.1), 0);
  EXPECT_TRUE(watch.probing());
  // Probed slow yields where the process hardly ran: the second pauses, and probing ends.
  EXPECT_EQ(feed(watch, YieldWatch::kForeignToPause - 1, kSlow, 0.1), 0);
  EXPECT_EQ(feed(watch, 1, kSlow, 0.1), 1);
  EXPECT_FALSE(watch.probing());
}

TEST(YieldWatch, OwnThreadsComputingNeverPause) {
  // Every yield slow, but the process ran the whole time (its own body computing on that core).
  YieldWatch watch;
  EXPECT_EQ(feed(watch, 10000, kSlow, 1.0), 0);
  // Half the time is still this process's own.
  EXPECT_EQ(feed(watch, 10000, kSlow, 0.5), 0);
}

TEST(YieldWatch, SlowYieldsSpreadOverWindowsNeverProbe) {
  // One slow yield in each window of quick ones: a body computing now and then, not a load.
  YieldWatch watch;
  for (int window = 0; window < 100; ++window) {
    EXPECT_EQ(feed(watch, 1, kSlow, 0.0), 0);
    EXPECT_FALSE(watch.probing());
    EXPECT_EQ(feed(watch, YieldWatch::kWindow - 1, kQuick, 0.0), 0);
  }
}

TEST(YieldWatch, ProbingEndsAfterItsYieldsWithoutAPause) {
  YieldWatch watch;
  EXPECT_EQ(feed(watch, YieldWatch::kSlowToProbe, kSlow, 0.1), 0);
  ASSERT_TRUE(watch.probing());
  // One foreign slice among the probes is not enough; quick yields then use the probes up.
  EXPECT_EQ(feed(watch, YieldWatch::kForeignToPause - 1, kSlow, 0.1), 0);
  EXPECT_EQ(feed(watch, YieldWatch::kProbes, kQuick, 0.0), 0);
  EXPECT_FALSE(watch.probing());
  // A new suspicion starts from no foreign yields.
  EXPECT_EQ(feed(watch, YieldWatch::kSlowToProbe, kSlow, 0.1), 0);
  EXPECT_EQ(feed(watch, YieldWatch::kForeignToPause - 1, kSlow, 0.1), 0);
  EXPECT_EQ(feed(watch, 1, kSlow, 0.1), 1);
}

}  // namespace
}  // namespace spmd::internal
