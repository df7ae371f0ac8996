// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the runtime tests: array literals, exact comparisons, error expectations,
// and the pmap-style adapter used to run JAX's pmap conformance cases through shard_map.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <initializer_list>
#include <string>
#include <thread>
#include <vector>

#include "spmd/spmd.h"

namespace spmd {
// Platforms print by name, in test names and messages ("Backends/Collectives.C02Psum/cuda").
inline void PrintTo(const Platform& platform, std::ostream* os) { *os << platform.name(); }

}  // namespace spmd

namespace spmd::testing {

// Why `platform` cannot run a suite that needs `needed` of its devices, or "" when it can: a
// platform not built in or without devices here (CUDA without a GPU) is not in use, and a GPU
// with one logical device has too few. Suites parameterised over platforms skip with this reason
// (reported as skipped, never as passed).
inline std::string platform_unavailable(Platform platform, int needed) {
  int count = 0;
  try {
    count = device_count(platform.name());
  } catch (const ValueError& e) {
    return e.what();
  }
  if (count >= needed) return "";
  return std::string(platform.name()) + " has " + std::to_string(count) +
         " devices; this suite needs " + std::to_string(needed) +
         (platform == Platform::kCuda ? " (SPMD_CUDA_DEVICES_PER_GPU=8 puts 8 on one GPU)" : "");
}

template <class T>
Array array(std::vector<T> values, Shape shape) {
  return Array::from_vector<T>(values, shape);
}
inline Array ints(std::vector<int32_t> values, Shape shape) { return array(values, shape); }
inline Array ints(std::vector<int32_t> values) {
  Shape shape{static_cast<int64_t>(values.size())};
  return array(values, shape);
}
inline Array floats(std::vector<float> values, Shape shape) { return array(values, shape); }
inline Array floats(std::vector<float> values) {
  Shape shape{static_cast<int64_t>(values.size())};
  return array(values, shape);
}
// arange(n) as float32, reshaped.
inline Array farange(int64_t n, Shape shape) {
  return arange(n, DType::kFloat32).reshape(std::move(shape));
}
inline Array iarange(int64_t n, Shape shape) { return arange(n).reshape(std::move(shape)); }

// Shape, dtype and every element equal (exact, bitwise for floats).
inline ::testing::AssertionResult arrays_equal(const Array& actual, const Array& expected) {
  if (array_equal(actual, expected)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "actual " << type_string(actual.dtype(), actual.shape()) << " " << actual
         << "\nexpected " << type_string(expected.dtype(), expected.shape()) << " " << expected;
}
#define EXPECT_ARRAY_EQ(actual, expected) \
  EXPECT_TRUE(::spmd::testing::arrays_equal((actual), (expected)))

// Runs `fn`, expects exception type E whose message contains every phrase.
template <class E, class Fn>
void expect_error(Fn&& fn, std::initializer_list<std::string> phrases) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception, none was thrown";
  } catch (const E& e) {
    for (const std::string& p : phrases) EXPECT_THAT(e.what(), ::testing::HasSubstr(p));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type " << typeid(e).name() << ": " << e.what();
  }
}

// Runs `call` until it does not raise DeviceUnavailable, at most `limit` long: a device that an
// earlier call quarantined (its body stuck past the deadline) is usable again once that body
// returns. Returns what `call` returns; the last DeviceUnavailable escapes after `limit`.
template <class F>
auto when_available(F&& call, std::chrono::milliseconds limit = std::chrono::milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (;;) {
    try {
      return call();
    } catch (const DeviceUnavailable&) {
      if (std::chrono::steady_clock::now() > end) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

// A body that holds its device in user code until `release` (at most 10 s), recording that it
// did. It holds only off the calling thread: threads idle in a call, the caller's included, run
// bodies, and a caller held in a body cannot return before it does (the documented limit).
struct Holder {
  std::thread::id caller = std::this_thread::get_id();
  std::atomic<bool> release{false};
  std::atomic<bool> held{false};
  void hold_unless_on_caller() {
    if (std::this_thread::get_id() == caller) return;
    held = true;
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!release && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
};

inline Mesh mesh1(int64_t n, const std::string& name = "i") { return make_mesh({n}, {name}); }
inline Mesh mesh2(int64_t a, int64_t b, const std::string& x = "i", const std::string& y = "j") {
  return make_mesh({a, b}, {x, y});
}

// JAX's pmap over the first n devices with in_axes = out_axes = 0, written as a shard_map (the
// design of JAX's own pmap-on-shard_map): the body sees each argument with dim 0 squeezed and its
// result gets dim 0 back. check_vma is off, as in pmap.
template <class F>
auto pmap_like(F f, int64_t n, const std::string& name = "i") {
  Mesh mesh = mesh1(n, name);
  return shard_map(
      [f](const Array& x) { return expand_dims(f(squeeze(x, std::vector<int>{0})), 0); }, mesh,
      P(name), P(name), {.check_vma = false});
}

}  // namespace spmd::testing
