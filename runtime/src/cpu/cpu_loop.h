// SPDX-License-Identifier: Apache-2.0
// Internal: what the CPU kernel files (cpu_kernels.cc, cpu_unary.cc, cpu_binary.cc,
// cpu_reduce.cc, cpu_matmul.cc, cpu_complex_kernels.cc) share: strided iteration and the error
// for an op a dtype lacks.
//
// Elementwise work runs through Loop, which coalesces dimensions so that dense operands become a
// single unit-stride run the compiler can vectorise; broadcast (0), transposed and negative
// strides take the same path.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "backend/element_rules.h"
#include "backend/kernels.h"
#include "spmd/errors.h"

namespace spmd::internal {

[[noreturn]] inline void unsupported(const char* kernel, int op, DType dt) {
  throw TypeError(std::string("cpu kernels: ") + kernel + " op " + std::to_string(op) +
                  " is not defined for " + std::string(dtype_name(dt)));
}

template <size_t N>
using Offsets = std::array<int64_t, N>;

// Row-major iteration over a shape for N operands with their own strides. Dimensions that are
// contiguous in every operand are merged and unit dimensions dropped, so dense operands become
// one run; row-major order of the flattened index is preserved.
template <size_t N>
class Loop {
 public:
  Loop(const Dims& shape, const std::array<const Strides*, N>& strides) {
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0) {
        empty_ = true;
        return;
      }
      if (shape[d] == 1) continue;
      bool merge = !dims_.empty();
      for (size_t k = 0; k < N && merge; ++k) {
        merge = strides_.back()[k] == (*strides[k])[d] * shape[d];
      }
      Offsets<N> step;
      for (size_t k = 0; k < N; ++k) step[k] = (*strides[k])[d];
      if (merge) {
        dims_.back() *= shape[d];
        strides_.back() = step;
      } else {
        dims_.push_back(shape[d]);
        strides_.push_back(step);
      }
    }
    if (dims_.empty()) {
      dims_.push_back(1);
      strides_.push_back({});
    }
  }

  // Calls run(n, offsets, steps) for each innermost run of n elements: operand k's elements are
  // at offsets[k] + i * steps[k]. `base` is added to every offset.
  template <class Run>
  void run(Run&& run_fn, Offsets<N> base = {}) const {
    if (empty_) return;
    const size_t inner = dims_.size() - 1;
    walk(inner, base, [&](const Offsets<N>& o) { run_fn(dims_[inner], o, strides_[inner]); });
  }

  // Calls run(rows, n, offsets, row_steps, steps) for each plane of the two innermost merged
  // dimensions (one row when there is a single dimension), so that a kernel can tile it.
  template <class Run>
  void run_planes(Run&& run_fn) const {
    if (empty_) return;
    if (dims_.size() == 1) {
      run_fn(int64_t{1}, dims_[0], Offsets<N>{}, Offsets<N>{}, strides_[0]);
      return;
    }
    const size_t rows = dims_.size() - 2;
    walk(rows, {}, [&](const Offsets<N>& o) {
      run_fn(dims_[rows], dims_[rows + 1], o, strides_[rows], strides_[rows + 1]);
    });
  }

 private:
  // Calls visit(offsets) for every index of the first `outer` merged dimensions, in row-major
  // order.
  template <class Visit>
  void walk(size_t outer, Offsets<N> base, Visit&& visit) const {
    Dims index(outer, 0);
    for (;;) {
      visit(base);
      auto d = static_cast<int64_t>(outer) - 1;
      for (; d >= 0; --d) {
        for (size_t k = 0; k < N; ++k) base[k] += strides_[d][k];
        if (++index[d] < dims_[d]) break;
        for (size_t k = 0; k < N; ++k) base[k] -= strides_[d][k] * dims_[d];
        index[d] = 0;
      }
      if (d < 0) return;
    }
  }

  Dims dims_;
  SmallVector<Offsets<N>, Dims::kCapacity> strides_;  // per merged dimension, per operand
  bool empty_ = false;
};

// A unit-stride run of n elements of y = f(x...), where input kScalar (if >= 0) is one value
// broadcast along the run and the others have unit stride: strides known at compile time, so
// that the loop vectorises (`v * 2`, `maximum(z, 0)`: an operand broadcast from a scalar).
template <int kScalar, class TY, class... TX, class F, size_t... I>
void dense_run(F f, StorageOf<TY>* yp, const std::tuple<const StorageOf<TX>*...>& xp, int64_t n,
               std::index_sequence<I...>) {
  for (int64_t i = 0; i < n; ++i) {
    store<TY>(yp + i, f(load<TX>(std::get<I>(xp) + (static_cast<int>(I) == kScalar ? 0 : i))...));
  }
}

// y[i] = f(x[i]...) in the compute types, where TY and TX are the element types of y and x.
template <class TY, class... TX, class F, size_t... I>
void map_views(F f, const MutView& y, const std::array<const ConstView*, sizeof...(TX)>& x,
               std::index_sequence<I...> inputs) {
  constexpr size_t kN = 1 + sizeof...(TX);
  auto* const py = static_cast<StorageOf<TY>*>(y.data);
  const std::tuple px{static_cast<const StorageOf<TX>*>(x[I]->data)...};
  auto run = [&](int64_t n, const Offsets<kN>& o, const Offsets<kN>& s) {
    StorageOf<TY>* const yp = py + o[0];
    const std::tuple xp{(std::get<I>(px) + o[I + 1])...};
    const int unit = ((s[I + 1] == 1 ? 1 : 0) + ... + 0);
    const int broadcast = ((s[I + 1] == 0 ? 1 : 0) + ... + 0);
    if (s[0] == 1 && unit == static_cast<int>(sizeof...(TX))) {
      return dense_run<-1, TY, TX...>(f, yp, xp, n, inputs);
    }
    if (s[0] == 1 && broadcast == 1 && unit == static_cast<int>(sizeof...(TX)) - 1) {
      // One scalar operand: the run for its position.
      ((s[I + 1] == 0 ? dense_run<static_cast<int>(I), TY, TX...>(f, yp, xp, n, inputs) : void()),
       ...);
      return;
    }
    for (int64_t i = 0; i < n; ++i) {
      store<TY>(yp + i * s[0], f(load<TX>(std::get<I>(xp) + i * s[I + 1])...));
    }
  };
  // Rank 0 and 1 are one run already (the small ops of a training step): no Loop to build.
  if (y.shape.size() == 0) return run(1, {}, {});
  if (y.shape.size() == 1) return run(y.shape[0], {}, {y.strides[0], x[I]->strides[0]...});
  Loop<kN>(y.shape, {&y.strides, &x[I]->strides...}).run(run);
}

template <class TY, class... TX, class F, class... Views>
void map(F f, const MutView& y, const Views&... x) {
  map_views<TY, TX...>(f, y, {&x...}, std::index_sequence_for<TX...>{});
}

// For each element of y (dense, in order): state = init(), step(state, v) for every v of x's
// trailing `num_reduced` dimensions in row-major order (as T's compute values), then
// y = finish(state) stored as a U.
template <class T, class U, class Init, class Step, class Finish>
void fold_trailing(const ConstView& x, int num_reduced, const MutView& y, Init init, Step step,
                   Finish finish) {
  const auto split = static_cast<int64_t>(x.shape.size()) - num_reduced;
  const Dims outer_shape(x.shape.begin(), x.shape.begin() + split);
  const Dims inner_shape(x.shape.begin() + split, x.shape.end());
  const Strides outer_strides(x.strides.begin(), x.strides.begin() + split);
  const Strides inner_strides(x.strides.begin() + split, x.strides.end());
  const Loop<1> outer(outer_shape, {&outer_strides});
  const Loop<1> inner(inner_shape, {&inner_strides});
  const auto* const px = static_cast<const StorageOf<T>*>(x.data);
  auto* const py = static_cast<StorageOf<U>*>(y.data);
  int64_t out = 0;
  outer.run([&](int64_t n, const Offsets<1>& o, const Offsets<1>& s) {
    for (int64_t i = 0; i < n; ++i) {
      auto state = init();
      inner.run(
          [&](int64_t m, const Offsets<1>& io, const Offsets<1>& is) {
            for (int64_t j = 0; j < m; ++j) step(state, load<T>(px + io[0] + j * is[0]));
          },
          {o[0] + i * s[0]});
      store<U>(py + out++, finish(state));
    }
  });
}

}  // namespace spmd::internal
