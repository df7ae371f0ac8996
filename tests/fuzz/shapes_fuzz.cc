// SPDX-License-Identifier: Apache-2.0
// libFuzzer target 1: shapes and shape parameters. A short program of array operations over a
// small stack of arrays, each with fuzzed shapes, extents, axes, permutations, slice bounds and
// dtypes (constructors, reshape, broadcast_to, slice, transpose, squeeze/expand_dims, concatenate,
// stack, take, reductions, binary ops, matmul, random, host round trips). Every operation must
// return a value or raise an spmd::Error (fuzz_input.h).
#include <algorithm>
#include <deque>

#include "fuzz_input.h"

namespace spmd::fuzz {
namespace {

constexpr int kOps = 12;
constexpr size_t kStack = 6;

// The broadcast of two shapes holds few elements (kernels are elementwise).
bool broadcast_affordable(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = std::max(x, y);
  }
  return affordable(out);
}

void step(FuzzedDataProvider& in, std::deque<Array>& stack) {
  const Array& x = stack[in.ConsumeIntegralInRange<size_t>(0, stack.size() - 1)];
  const Array& y = stack[in.ConsumeIntegralInRange<size_t>(0, stack.size() - 1)];
  auto push = [&](Array a) {
    if (span(a.shape()) > kMaxElements) return;  // checked; too costly to work on further
    stack.push_back(std::move(a));
    if (stack.size() > kStack) stack.pop_front();
  };
  switch (in.ConsumeIntegralInRange<int>(0, 19)) {
    case 0: {
      Shape s = shape(in);
      DType dt = dtype(in);
      if (affordable(s))
        push(in.ConsumeBool() ? zeros(s, dt) : full(s, in.ConsumeFloatingPoint<double>(), dt));
      return;
    }
    case 1: {
      int64_t start = big_int(in), stop = big_int(in), step = big_int(in);
      __int128 span = static_cast<__int128>(stop) - start;
      if (step != 0 && span / step > kMaxElements) stop = start;  // a huge but valid range
      push(arange(start, stop, step, dtype(in)));
      return;
    }
    case 2:
      push(reshape(x, shape(in)));
      return;
    case 3: {
      Shape s = shape(in);
      if (affordable(s)) push(broadcast_to(x, s));
      return;
    }
    case 4: {
      std::vector<int64_t> start, stop, steps;
      const int n = in.ConsumeIntegralInRange<int>(0, 4);
      const bool with_steps = in.ConsumeBool();
      for (int d = 0; d < n; ++d) {
        start.push_back(big_int(in));
        stop.push_back(big_int(in));
        if (with_steps) steps.push_back(big_int(in));
      }
      push(slice(x, start, stop, steps));
      return;
    }
    case 5: {
      std::vector<int> perm(in.ConsumeIntegralInRange<int>(0, 4));
      for (int& p : perm) p = axis(in);
      push(transpose(x, perm));
      return;
    }
    case 6:
      push(in.ConsumeBool() ? squeeze(x, axis(in)) : expand_dims(x, axis(in)));
      return;
    case 7:
      push(in.ConsumeBool() ? swapaxes(x, axis(in), axis(in)) : moveaxis(x, axis(in), axis(in)));
      return;
    case 8: {
      std::vector<Array> parts(in.ConsumeIntegralInRange<int>(0, 3), x);
      if (in.ConsumeBool()) parts.push_back(y);
      push(in.ConsumeBool() ? concatenate(parts, axis(in)) : spmd::stack(parts, axis(in)));
      return;
    }
    case 9:
      push(take(x, big_int(in), axis(in)));
      return;
    case 10: {
      Axes axes;
      if (in.ConsumeBool()) {
        std::vector<int> list(in.ConsumeIntegralInRange<int>(0, 3));
        for (int& a : list) a = axis(in);
        axes = Axes(list);
      }
      const bool keep = in.ConsumeBool();
      switch (in.ConsumeIntegralInRange<int>(0, 4)) {
        case 0:
          push(sum(x, axes, keep));
          return;
        case 1:
          push(mean(x, axes, keep));
          return;
        case 2:
          push(max(x, axes, keep));
          return;
        case 3:
          push(any(x, axes, keep));
          return;
        default:
          push(argmax(x, in.ConsumeBool() ? std::optional<int>(axis(in)) : std::nullopt, keep));
          return;
      }
    }
    case 11:
      if (broadcast_affordable(x.shape(), y.shape())) {
        switch (in.ConsumeIntegralInRange<int>(0, 4)) {
          case 0:
            push(x + y);
            return;
          case 1:
            push(x / y);
            return;
          case 2:
            push(floor_divide(x, y));
            return;
          case 3:
            push(where(x > y, x, y));
            return;
          default:
            push(power(x, y));
            return;
        }
      }
      return;
    case 12:
      // Its work is at most the product of the spans (each at most kMaxElements on the stack).
      if (span(x.shape()) * span(y.shape()) <= kMaxElements * 16) push(matmul(x, y));
      return;
    case 13:
      push(x.astype(dtype(in)));
      return;
    case 14: {
      Shape s = shape(in);
      if (!affordable(s)) return;
      Array key = random::PRNGKey(in.ConsumeIntegral<int64_t>());
      switch (in.ConsumeIntegralInRange<int>(0, 2)) {
        case 0:
          push(random::uniform(key, s, in.ConsumeBool() ? DType::kFloat32 : dtype(in)));
          return;
        case 1:
          push(random::normal(key, s));
          return;
        default:
          push(random::bits(key, s));
          return;
      }
    }
    case 15: {
      std::vector<float> values(in.ConsumeIntegralInRange<size_t>(0, 16));
      push(Array::from_vector(values,
                              in.ConsumeBool() ? std::optional<Shape>(shape(in)) : std::nullopt));
      return;
    }
    case 16:
      push(x[big_int(in)]);
      return;
    case 17:
      x.str();
      x.to_vector<double>();
      return;
    case 18: {
      std::vector<int> axes(in.ConsumeIntegralInRange<int>(0, 3));
      for (int& a : axes) a = axis(in);
      push(squeeze(x, axes));
      return;
    }
    default:
      if (broadcast_affordable(x.shape(), y.shape()))
        push(where(x, y, in.ConsumeFloatingPoint<float>()));
      return;
  }
}

}  // namespace
}  // namespace spmd::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spmd::initialize({.cpu_devices = 8});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::deque<spmd::Array> stack;
  spmd::fuzz::expect_spmd("setup", [&] { stack.push_back(spmd::fuzz::small_array(in)); });
  if (stack.empty()) return 0;
  for (int op = 0; op < spmd::fuzz::kOps && in.remaining_bytes() > 0; ++op) {
    spmd::fuzz::expect_spmd("shape op", [&] { spmd::fuzz::step(in, stack); });
  }
  return 0;
}
