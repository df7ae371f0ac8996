// SPDX-License-Identifier: Apache-2.0
// Shared by the libFuzzer targets of tests/fuzz: turning fuzz input into spmd values (shapes with
// hostile extents, axes, devices, specs) and the contract every target checks. Any input must end
// in a value or an spmd::Error: another exception aborts (a crash for libFuzzer), and so does any
// sanitizer report; a hang is caught by libFuzzer's -timeout, a leak by LeakSanitizer.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

#include "spmd/spmd.h"

namespace spmd::fuzz {

// Arrays the targets let spmd allocate have at most this many elements (valid shapes beyond it
// are clamped; invalid ones are passed on, as they must fail before allocating anything).
inline constexpr int64_t kMaxElements = 4096;

// Runs `op`; an spmd::Error is a fine outcome, anything else aborts with what it was.
template <class Op>
void expect_spmd(const char* what, Op&& op) {
  try {
    op();
  } catch (const Error&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: a non-spmd exception escaped: %s: %s\n", what, typeid(e).name(),
                 e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "%s: a non-std::exception escaped\n", what);
    std::abort();
  }
}

// An extent: mostly small, sometimes hostile (negative, at int32/int64 limits, huge products).
inline int64_t extent(FuzzedDataProvider& in) {
  static constexpr int64_t kHostile[] = {-1,
                                         -2,
                                         0,
                                         int64_t{1} << 31,
                                         int64_t{1} << 32,
                                         int64_t{1} << 33,
                                         int64_t{1} << 62,
                                         std::numeric_limits<int64_t>::max(),
                                         std::numeric_limits<int64_t>::min()};
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) return in.PickValueInArray(kHostile);
  return in.ConsumeIntegralInRange<int64_t>(0, 6);
}

inline Shape shape(FuzzedDataProvider& in, int max_rank = 4) {
  Shape s(in.ConsumeIntegralInRange<int>(0, max_rank));
  for (int64_t& e : s) e = extent(in);
  return s;
}

// The elements of shape `s` with its zero extents counted as 1 (saturating at int64's maximum):
// what bounds the work of later operations on an array of that shape (a (0, 2^40) array is empty,
// but a reduction over its axis 0 has 2^40 outputs).
inline int64_t span(const Shape& s) {
  int64_t n = 1;
  for (int64_t e : s) {
    if (__builtin_mul_overflow(n, std::max<int64_t>(e, 1), &n)) {
      return std::numeric_limits<int64_t>::max();
    }
  }
  return n;
}

// The element count of `s` when it is a valid shape: no negative extent, and its nonzero extents
// multiply within int64 (spmd's rule, as NumPy's).
inline bool valid_count(const Shape& s, int64_t& count) {
  for (int64_t e : s) {
    if (e < 0) return false;
  }
  if (span(s) == std::numeric_limits<int64_t>::max()) return false;
  count = 1;
  for (int64_t e : s) count *= e;
  return true;
}

// True when spmd may be asked to allocate an array of shape `s`: an invalid shape (it must fail
// with ValueError before allocating) or a small one (an empty one of any span allocates nothing).
inline bool affordable(const Shape& s) {
  int64_t count = 0;
  return !valid_count(s, count) || count <= kMaxElements;
}

inline DType dtype(FuzzedDataProvider& in) {
  return static_cast<DType>(in.ConsumeIntegralInRange<int>(0, 7));
}

// An axis or index argument: mostly in a small range, sometimes at the int limits.
inline int axis(FuzzedDataProvider& in) {
  if (in.ConsumeIntegralInRange<int>(0, 15) == 0) {
    return in.PickValueInArray({std::numeric_limits<int>::min(), std::numeric_limits<int>::max()});
  }
  return in.ConsumeIntegralInRange<int>(-5, 5);
}

inline int64_t big_int(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) return in.ConsumeIntegralInRange<int64_t>(-8, 8);
  return in.ConsumeIntegral<int64_t>();
}

// An axis name from a small alphabet (with one that is never a mesh axis, and the empty name).
inline std::string name(FuzzedDataProvider& in) {
  return in.PickValueInArray<std::string>({"i", "j", "k", "z", ""});
}

// A PartitionSpec entry list of up to `max_entries` entries: None, a name, or a tuple of names.
inline PartitionSpec spec(FuzzedDataProvider& in, int max_entries = 3) {
  std::vector<PartitionSpec::Entry> entries;
  const int n = in.ConsumeIntegralInRange<int>(0, max_entries);
  for (int e = 0; e < n; ++e) {
    switch (in.ConsumeIntegralInRange<int>(0, 2)) {
      case 0:
        entries.emplace_back(None);
        break;
      case 1:
        entries.emplace_back(name(in));
        break;
      default:
        entries.emplace_back(std::vector<std::string>{name(in), name(in)});
    }
  }
  return PartitionSpec(std::move(entries));
}

// A device of this runtime, or sometimes one that is not (a bad id, another platform).
inline Device device(FuzzedDataProvider& in) {
  static constexpr Platform kTpu{"tpu"};
  switch (in.ConsumeIntegralInRange<int>(0, 15)) {
    case 0:
      return Device{in.PickValueInArray({-1, 8, 99, std::numeric_limits<int>::max()})};
    case 1:
      return Device{0, kTpu};
    case 2:
      return Device{0, Platform::kCpu, 1};
    default:
      return Device{in.ConsumeIntegralInRange<int>(0, 7)};
  }
}

// The array a target works on: arange over a small shape, reshaped, of a fuzzed dtype.
inline Array small_array(FuzzedDataProvider& in, int max_rank = 3) {
  Shape s(in.ConsumeIntegralInRange<int>(0, max_rank));
  for (int64_t& e : s) e = in.ConsumeIntegralInRange<int64_t>(1, 4);
  int64_t count = 0;
  valid_count(s, count);
  return arange(count).reshape(s).astype(dtype(in));
}

}  // namespace spmd::fuzz
