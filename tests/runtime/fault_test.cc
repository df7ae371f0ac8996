// SPDX-License-Identifier: Apache-2.0
// Fault behaviour of mapped calls (docs/design.md, "Faults"): an exception on one device aborts the
// call and releases the others; devices that run different collectives, or return while others
// wait, get CollectiveMismatch at once; a device stuck in user code past the deadline gives
// CollectiveTimeout naming it. Every test bounds its own running time: none of these may hang.
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "exec/executor.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int device_index() { return axis_index("i").item<int32_t>(); }

// The exception type every device saw, by mesh position.
struct Seen {
  std::mutex mu;
  std::vector<std::string> kinds = std::vector<std::string>(8);
  void record(int d, const std::string& kind) {
    std::lock_guard<std::mutex> lock(mu);
    kinds[d] = kind;
  }
};

TEST(Faults, UserExceptionAbortsTheCallAndReleasesWaiters) {
  auto start = Clock::now();
  auto f = shard_map(
      [](const Array& b) {
        if (device_index() == 3) throw std::runtime_error("bad input on this shard");
        return psum(b, "i");  // the other seven would wait for device 3 forever
      },
      mesh1(8), P("i"), P());
  try {
    f(arange(16));
    FAIL() << "expected DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("[on cpu:3]"));
    EXPECT_EQ(e.device(), Device{3});
    EXPECT_THAT(e.what(), ::testing::HasSubstr("bad input on this shard"));
    try {
      std::rethrow_if_nested(e);
      FAIL() << "the original exception should be nested";
    } catch (const std::runtime_error& original) {
      EXPECT_STREQ(original.what(), "bad input on this shard");
    }
  }
  EXPECT_LT(seconds_since(start), 5.0);
}

TEST(Faults, SpmdErrorsKeepTheirTypeAndRecordTheDevice) {
  auto f = shard_map(
      [](const Array& b) {
        if (device_index() == 2) return reshape(b, {3});  // ValueError on device 2 only
        return all_gather(b, "i", {.tiled = true});
      },
      mesh1(4), P("i"), P("i"));
  try {
    f(arange(8));
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_EQ(e.device(), devices()[2]);
    EXPECT_THAT(e.what(), ::testing::StartsWith("[on cpu:2] cannot reshape array"));
  }
}

TEST(Faults, DifferentCollectivesRaiseMismatchOnEveryDevice) {
  Seen seen;
  auto f = shard_map(
      [&](const Array& b) {
        int d = device_index();
        try {
          return d == 0 ? psum(b, "i") : pmax(b, "i");
        } catch (const CollectiveMismatch&) {
          seen.record(d, "mismatch");
          throw;
        }
      },
      mesh1(4), P("i"), P("i"), {.check_vma = false});
  expect_error<CollectiveMismatch>(
      [&] { f(arange(8)); },
      {"ran different collectives at collective #1", "psum of i32[2]", "pmax of i32[2]"});
  for (int d = 0; d < 4; ++d) EXPECT_EQ(seen.kinds[d], "mismatch") << "device " << d;
}

TEST(Faults, MismatchMessageNamesTheDevicesInMeshOrder) {
  // Which device notices the mismatch first depends on timing; the message must not. Device 1
  // sleeps on half of the runs so that each device is the first to notice on some of them.
  for (int run = 0; run < 6; ++run) {
    auto f = shard_map(
        [run](const Array& b) {
          int d = device_index();
          if (d == run % 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
          return d == 0 ? pmax(b, "i") : psum(b, "i");
        },
        mesh1(2), P("i"), P("i"), {.check_vma = false});
    expect_error<CollectiveMismatch>([&] { f(arange(4)); },
                                     {"at collective #1: cpu:0 ran pmax of i32[2] over 'i', cpu:1 "
                                      "ran psum of i32[2] over 'i'."});
  }
}

TEST(Faults, SeveralRaisingBodiesReportTheFirstInMeshOrder) {
  // Every body raises, the last in mesh order first (the others wait for it to have raised): the
  // caller still gets cpu:0's error, whichever raised first in time. (Waiting for all four to
  // have started instead would wait out its deadline where devices outnumber cores: the executor
  // then starts only as many bodies at once as there are cores.)
  for (int run = 0; run < 6; ++run) {
    std::atomic<bool> last_raised{false};
    auto f = shard_map(
        [&](const Array& b) {
          int d = device_index();
          if (d == 3) {
            last_raised = true;
            throw std::runtime_error("bad shard on device 3");
          }
          auto end = Clock::now() + std::chrono::seconds(5);
          while (!last_raised && Clock::now() < end) std::this_thread::yield();
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
          throw std::runtime_error("bad shard on device " + std::to_string(d));
          return b;
        },
        mesh1(4), P("i"), P("i"));
    expect_error<DeviceError>([&] { f(arange(8)); }, {"[on cpu:0]", "bad shard on device 0"});
  }
}

TEST(Faults, DifferentAxesShapesOrParametersAreMismatches) {
  Mesh mesh = mesh2(2, 2);
  auto axes = shard_map(
      [](const Array& b) {
        return axis_index("j").item<int32_t>() == 0 ? psum(b, "i") : psum(b, "j");
      },
      mesh, P("i", "j"), P("i", "j"), {.check_vma = false});
  expect_error<CollectiveMismatch>([&] { axes(iarange(16, {4, 4})); }, {"over 'i'", "over 'j'"});
  auto shapes = shard_map(
      [](const Array& b) {
        return psum(axis_index("i").item<int32_t>() == 0 ? b : concatenate({b, b}), "i");
      },
      mesh1(2), P("i"), P("i"), {.check_vma = false});
  expect_error<CollectiveMismatch>([&] { shapes(arange(4)); }, {"i32[2]", "i32[4]"});
  auto params =
      shard_map([](const Array& b) { return all_gather(b, "i", {.tiled = device_index() == 0}); },
                mesh1(2), P("i"), P("i"), {.check_vma = false});
  expect_error<CollectiveMismatch>([&] { params(arange(4)); }, {"different parameters"});
}

TEST(Faults, SeveralArraysOfOneDtypeAreOneCollective) {
  // One device reduces two arrays in one call, the other one at a time: the first collectives
  // differ, so both devices learn it at once (not a hang, not a mixed-up sum).
  auto split = shard_map(
      [](const Array& b) {
        if (device_index() == 0) return psum(std::vector<Array>{b, b}, "i")[1];
        return psum(b, "i") + psum(b, "i");
      },
      mesh1(2), P("i"), P("i"), {.check_vma = false});
  expect_error<CollectiveMismatch>(
      [&] { split(farange(4, {4})); },
      {"psum of 2 f32 arrays (4 elements in all) over 'i'", "psum of f32[2] over 'i'"});
  // The same elements in all, cut into different shapes.
  auto shapes = shard_map(
      [](const Array& b) {
        const int64_t cut = device_index() == 0 ? 2 : 3;
        return psum(std::vector<Array>{slice(b, {0}, {cut}), slice(b, {cut}, {5})}, "i")[0];
      },
      mesh1(2), P("i"), P(), {.check_vma = false});
  expect_error<CollectiveMismatch>([&] { shapes(farange(10, {10})); },
                                   {"psum of 2 f32 arrays (5 elements in all)"});
}

TEST(Faults, ReturningWhileOthersWaitIsAnErrorAtOnce) {
  auto start = Clock::now();
  auto f = shard_map(
      [](const Array& b) {
        if (device_index() == 5) return b;  // skips the collective
        return psum(b, "i");
      },
      mesh1(8), P("i"), P("i"), {.check_vma = false});
  expect_error<CollectiveMismatch>(
      [&] { f(arange(16)); },
      {"cpu:5 returned from the body", "after 0 collectives", "psum of i32[2] over 'i'"});
  EXPECT_LT(seconds_since(start), 5.0);  // the deadline is 300 s: this was not a timeout
}

TEST(Faults, ExtraCollectiveAtTheEndIsAnError) {
  auto f = shard_map(
      [](const Array& b) {
        Array s = psum(b, "i");
        if (device_index() == 0) s = psum(s, "i");
        return s;
      },
      mesh1(4), P("i"), P("i"), {.check_vma = false});
  expect_error<CollectiveMismatch>([&] { f(arange(8)); }, {"returned from the body"});
}

TEST(Faults, StuckDeviceGivesTimeoutNamingIt) {
  auto start = Clock::now();
  auto f = shard_map(
      [](const Array& b) {
        Array s = psum(b, "i");
        if (device_index() == 3) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        return psum(s, "i");
      },
      mesh1(4), P("i"), P("i"), {.check_vma = false, .collective_timeout_s = 0.3});
  expect_error<CollectiveTimeout>(
      [&] { f(arange(8)); },
      {"did not complete within 0.3 s", "cpu:3 is running user code after collective #1",
       "SPMD_COLLECTIVE_TIMEOUT_S"});
  EXPECT_LT(seconds_since(start), 5.0);
  // cpu:3 is quarantined until its body wakes up and returns.
  auto good = shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(4), P("i"), P());
  EXPECT_ARRAY_EQ(when_available([&] { return good(arange(8)); }), ints({12, 16}));
}

TEST(Faults, WorkersAreHealthyAfterAFailedCall) {
  auto bad = shard_map(
      [](const Array& b) {
        if (device_index() == 1) throw std::runtime_error("boom");
        return psum(b, "i");
      },
      mesh1(4), P("i"), P());
  auto good = shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(4), P("i"), P());
  for (int round = 0; round < 20; ++round) {
    EXPECT_THROW(bad(arange(8)), DeviceError);
    EXPECT_ARRAY_EQ(good(arange(8)), ints({12, 16}));
  }
}

TEST(Faults, AllDevicesFailingReportsOneError) {
  auto f = shard_map([](const Array&) -> Array { throw ValueError("everyone fails"); }, mesh1(8),
                     P("i"), P("i"));
  expect_error<ValueError>([&] { f(arange(8)); }, {"everyone fails"});
}

TEST(Faults, ConcurrentCallsOnOverlappingMeshesDoNotDeadlock) {
  // Calls from two host threads on meshes that share devices in opposite orders.
  std::vector<Device> all = devices();
  Mesh forward({all.begin(), all.begin() + 4}, {4}, {"i"});
  Mesh backward({all[3], all[2], all[1], all[0]}, {4}, {"i"});
  auto run = [](const Mesh& mesh, std::atomic<int>& ok) {
    auto f = shard_map([](const Array& b) { return psum(b, "i"); }, mesh, P("i"), P());
    for (int k = 0; k < 200; ++k) ok += array_equal(f(arange(8)), ints({12, 16})) ? 1 : 0;
  };
  std::atomic<int> ok{0};
  std::thread a([&] { run(forward, ok); });
  std::thread b([&] { run(backward, ok); });
  a.join();
  b.join();
  EXPECT_EQ(ok.load(), 400);
}

TEST(Faults, EveryDeviceRunsOneBodyAtATime) {
  // Threads idle in a call run bodies that have not started, but a device never runs two bodies at
  // once, even with calls from two host threads on meshes that share devices.
  std::vector<Device> all = devices();
  Mesh forward({all.begin(), all.begin() + 4}, {4}, {"i"});
  Mesh backward({all[3], all[2], all[1], all[0]}, {4}, {"i"});
  std::vector<std::atomic<int>> in_flight(all.size());
  std::atomic<int> overlaps{0};
  auto run = [&](const Mesh& mesh, std::atomic<int>& ok) {
    auto body = [&](const Array& b) {
      const int id = mesh.devices()[axis_index("i").to_vector<int32_t>()[0]].id;
      if (in_flight[id]++ != 0) ++overlaps;
      std::this_thread::yield();
      --in_flight[id];
      return b * 2;
    };
    auto f = shard_map(body, mesh, P("i"), P("i"));
    for (int k = 0; k < 300; ++k) ok += array_equal(f(arange(8)), arange(8) * 2) ? 1 : 0;
  };
  std::atomic<int> ok{0};
  std::thread a([&] { run(forward, ok); });
  std::thread b([&] { run(backward, ok); });
  a.join();
  b.join();
  EXPECT_EQ(ok.load(), 600);
  EXPECT_EQ(overlaps.load(), 0);
}

// ---- the device of every fault ----

TEST(FaultDevices, EveryFaultCarriesItsDevice) {
  auto throws = shard_map(
      [](const Array& b) {
        if (device_index() == 3) throw std::runtime_error("bad shard");
        return psum(b, "i");
      },
      mesh1(4), P("i"), P());
  try {
    throws(arange(8));
    ADD_FAILURE() << "expected DeviceError";
  } catch (const DeviceError& e) {
    EXPECT_EQ(e.device(), devices()[3]);
    EXPECT_THAT(e.what(), ::testing::StartsWith("[on cpu:3] the body of '<lambda> at "));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("' raised std::runtime_error: bad shard"));
  }
  auto mismatch =
      shard_map([](const Array& b) { return device_index() == 0 ? psum(b, "i") : pmax(b, "i"); },
                mesh1(4), P("i"), P("i"), {.check_vma = false});
  try {
    mismatch(arange(8));
    ADD_FAILURE() << "expected CollectiveMismatch";
  } catch (const CollectiveMismatch& e) {
    ASSERT_TRUE(e.device().has_value());  // the device that found the mismatch
    EXPECT_THAT(e.what(), ::testing::StartsWith("[on " + e.device()->str() + "] devices of the"));
  }
  auto slow = shard_map(
      [](const Array& b) {
        if (device_index() == 2) std::this_thread::sleep_for(std::chrono::milliseconds(600));
        return psum(b, "i");
      },
      mesh1(4), P("i"), P("i"), {.check_vma = false, .collective_timeout_s = 0.2});
  try {
    slow(arange(8));
    ADD_FAILURE() << "expected CollectiveTimeout";
  } catch (const CollectiveTimeout& e) {
    ASSERT_TRUE(e.device().has_value());  // a device whose deadline passed, not the slow one
    EXPECT_NE(*e.device(), devices()[2]);
    EXPECT_THAT(e.what(), ::testing::StartsWith("[on " + e.device()->str() + "] psum"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("cpu:2 is running user code"));
  }
  // cpu:2 is quarantined until its body wakes up and returns.
  auto good = shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(4), P("i"), P());
  EXPECT_ARRAY_EQ(when_available([&] { return good(arange(8)); }), ints({12, 16}));
}

// ---- a call waits for its turn on devices busy with earlier calls ----

TEST(FaultTurns, ACallWaitsForADeviceBusyWithAnEarlierCall) {
  // Call A (no collective, 600 ms) runs on cpu:1; call B on cpu:1-2 starts later with a 200 ms
  // deadline. B used to fail blaming cpu:1 for "running user code before its first collective";
  // its deadline now counts from when its own bodies start.
  std::vector<Device> d = devices();
  std::atomic<bool> a_started{false};
  auto a = shard_map(
      [&](const Array& b) {
        a_started = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(600));
        return b;
      },
      Mesh({d[1]}, {1}, {"i"}), P("i"), P("i"));
  std::jthread first([&] { a(arange(2)); });
  while (!a_started) std::this_thread::yield();
  auto start = Clock::now();
  auto b = shard_map([](const Array& x) { return psum(x, "i"); }, Mesh({d[1], d[2]}, {2}, {"i"}),
                     P("i"), P(), {.collective_timeout_s = 0.2});
  EXPECT_ARRAY_EQ(b(arange(4)), ints({2, 4}));
  EXPECT_GT(seconds_since(start), 0.3);  // it waited for A
  first.join();
}

TEST(FaultTurns, TheDeadlineCountsFromTheLastStartAndBlamesTruthfully) {
  std::vector<Device> d = devices();
  std::atomic<bool> a_started{false};
  auto a = shard_map(
      [&](const Array& b) {
        a_started = true;
        std::this_thread::sleep_for(std::chrono::milliseconds(400));
        return b;
      },
      Mesh({d[1]}, {1}, {"i"}), P("i"), P("i"));
  std::jthread first([&] { a(arange(2)); });
  while (!a_started) std::this_thread::yield();
  auto start = Clock::now();
  // On cpu:1, B's body is itself slow (600 ms > the 200 ms deadline) once it runs.
  auto b = shard_map(
      [](const Array& x) {
        if (device_index() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(600));
        return psum(x, "i");
      },
      Mesh({d[1], d[2]}, {2}, {"i"}), P("i"), P(), {.collective_timeout_s = 0.2});
  expect_error<CollectiveTimeout>(
      [&] { b(arange(4)); },
      {"did not complete within 0.2 s", "cpu:1 is running user code before its first collective"});
  EXPECT_GT(seconds_since(start), 0.5);  // A's 400 ms on cpu:1, then B's own 200 ms there
  first.join();
  // cpu:1 is quarantined until B's body there wakes up and returns.
  auto good = shard_map([](const Array& x) { return psum(x, "i"); }, Mesh({d[1], d[2]}, {2}, {"i"}),
                        P("i"), P());
  EXPECT_ARRAY_EQ(when_available([&] { return good(arange(4)); }), ints({2, 4}));
}

TEST(FaultTurns, ALostWakeUpCostsOneDeadlineNotAHang) {
  // A worker whose wake-up is lost would never start its body, and its device's peers would wait
  // for it forever: their deadline moves on while a member has not started (it may be busy with
  // an earlier call). Once it has passed, the waiting body wakes the call's workers again.
  std::vector<Device> d = devices();
  auto f = shard_map([](const Array& x) { return psum(x, "i"); }, Mesh({d[1], d[2]}, {2}, {"i"}),
                     P("i"), P(), {.collective_timeout_s = 0.2});
  EXPECT_ARRAY_EQ(f(arange(4)), ints({2, 4}));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // both workers asleep again
  internal::Executor::lose_next_wake_for_testing(d[2].id);
  auto start = Clock::now();
  EXPECT_ARRAY_EQ(f(arange(4)), ints({2, 4}));
  EXPECT_GT(seconds_since(start), 0.15);  // cpu:2 started only when the deadline passed
}

// ---- a body stuck in user code ----

TEST(FaultStuck, TheCallerReturnsAtTheDeadlineAndTheDeviceIsQuarantined) {
  Holder holder;
  auto f = shard_map(
      [&](const Array& b) {
        if (device_index() == 3) holder.hold_unless_on_caller();
        return psum(b, "i");
      },
      mesh1(4), P("i"), P("i"), {.check_vma = false, .collective_timeout_s = 0.3});
  double elapsed = 0;
  for (int attempt = 0; attempt < 20 && !holder.held; ++attempt) {
    auto start = Clock::now();
    try {
      f(arange(8));
    } catch (const CollectiveTimeout& e) {
      elapsed = seconds_since(start);
      EXPECT_THAT(e.what(),
                  ::testing::HasSubstr("cpu:3 is running user code before its first collective"));
    }
  }
  ASSERT_TRUE(holder.held) << "cpu:3's body ran on the calling thread in every attempt";
  EXPECT_GE(elapsed, 0.3);
  EXPECT_LT(elapsed, 3.0);  // the body is held for 10 s
  // cpu:3 takes no work while its thread runs the stuck body ...
  auto good = shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(4), P("i"), P());
  expect_error<DeviceUnavailable>(
      [&] { good(arange(8)); },
      {"UNAVAILABLE: cpu:3 is quarantined: its thread still runs the body of '<lambda> at ",
       "' from a call that failed with CollectiveTimeout"});
  // ... the other devices do ...
  std::vector<Device> d = devices();
  auto others = shard_map([](const Array& b) { return psum(b, "i"); },
                          Mesh({d[0], d[1], d[2]}, {3}, {"i"}), P("i"), P());
  EXPECT_ARRAY_EQ(others(arange(6)), ints({6, 9}));
  // ... and cpu:3 is back once the body returns.
  holder.release = true;
  EXPECT_ARRAY_EQ(when_available([&] { return good(arange(8)); }), ints({12, 16}));
}

TEST(FaultStuck, CallsQueuedBehindAQuarantinedDeviceFail) {
  // Call B waits for its turn on cpu:3, where call A's body is stuck; when A's caller gives up on
  // that body, B fails with DeviceUnavailable instead of waiting for a turn that may never come.
  std::vector<Device> d = devices();
  Holder holder;
  auto a = shard_map(
      [&](const Array& b) {
        if (device_index() == 1) holder.hold_unless_on_caller();
        return psum(b, "i");
      },
      Mesh({d[2], d[3]}, {2}, {"i"}), P("i"), P("i"),
      {.check_vma = false, .collective_timeout_s = 0.5});
  auto b = shard_map([](const Array& x) { return psum(x, "i"); }, Mesh({d[3], d[4]}, {2}, {"i"}),
                     P("i"), P(), {.collective_timeout_s = 5});
  for (int attempt = 0; attempt < 20 && !holder.held; ++attempt) {
    std::atomic<bool> a_done{false};
    std::string b_error = "B did not fail";
    double b_seconds = -1;
    std::jthread launcher([&] {
      while (!holder.held && !a_done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (!holder.held) return;
      auto start = Clock::now();
      try {
        b(arange(4));
      } catch (const DeviceUnavailable& e) {
        b_error = e.what();
        b_seconds = seconds_since(start);
      }
    });
    try {
      a(arange(4));
    } catch (const CollectiveTimeout&) {
    }
    a_done = true;
    launcher.join();
    if (!holder.held) continue;
    EXPECT_THAT(b_error, ::testing::HasSubstr("UNAVAILABLE: cpu:3 is quarantined"));
    EXPECT_GE(b_seconds, 0.0);
    EXPECT_LT(b_seconds, 3.0);  // long before B's own 5 s deadline
  }
  ASSERT_TRUE(holder.held) << "cpu:3's body ran on the calling thread in every attempt";
  holder.release = true;
  EXPECT_ARRAY_EQ(when_available([&] { return b(arange(4)); }), ints({2, 4}));
}

TEST(FaultStuck, ACallerThatRunsTheStuckBodyReturnsWhenItReturns) {
  // The documented limit: the calling thread runs bodies too, and cannot return while it is
  // stuck in one. The others still time out at the deadline.
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> held{false};
  auto f = shard_map(
      [&](const Array& b) {
        if (std::this_thread::get_id() == caller) {
          held = true;
          std::this_thread::sleep_for(std::chrono::milliseconds(800));
        }
        return psum(b, "i");
      },
      mesh1(4), P("i"), P("i"), {.check_vma = false, .collective_timeout_s = 0.2});
  double elapsed = 0;
  for (int attempt = 0; attempt < 20 && !held; ++attempt) {
    auto start = Clock::now();
    try {
      f(arange(8));
    } catch (const CollectiveTimeout& e) {
      elapsed = seconds_since(start);
    }
  }
  ASSERT_TRUE(held) << "the calling thread ran no body in any attempt";
  EXPECT_GE(elapsed, 0.8);
  EXPECT_ARRAY_EQ(
      shard_map([](const Array& b) { return psum(b, "i"); }, mesh1(4), P("i"), P())(arange(8)),
      ints({12, 16}));
}

}  // namespace
}  // namespace spmd
