// SPDX-License-Identifier: Apache-2.0
// A worker thread that cannot start (the process is out of threads) fails the launch with
// ResourceExhausted, and the threads the launch had started are stopped again: nothing is left
// behind, and the next launch starts them afresh. Its own binary: the test needs devices whose
// workers have not started yet.
#include <dirent.h>

#include <thread>

#include "exec/executor.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

// The threads of this process.
int thread_count() {
  int n = 0;
  DIR* dir = opendir("/proc/self/task");
  while (dirent* entry = readdir(dir)) n += entry->d_name[0] != '.';
  closedir(dir);
  return n;
}

TEST(ThreadLimit, AFailedThreadStartIsRolledBackAndReported) {
  auto f = shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(8), P("i"), P());
  // ThreadSanitizer starts a thread of its own with the first thread the process creates.
  std::thread([] {}).join();
  const int before = thread_count();
  internal::Executor::fail_thread_starts_for_testing(3);
  expect_error<ResourceExhausted>(
      [&] { f(arange(16)); }, {"RESOURCE_EXHAUSTED: could not start the worker thread of cpu:3 (",
                               "Each device is a host thread"});
  EXPECT_EQ(thread_count(), before);
  internal::Executor::fail_thread_starts_for_testing(-1);
  EXPECT_ARRAY_EQ(f(arange(16)), ints({56, 64}));
  EXPECT_EQ(thread_count(), before + 8);
}

}  // namespace
}  // namespace spmd
