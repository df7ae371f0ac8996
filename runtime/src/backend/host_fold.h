// SPDX-License-Identifier: Apache-2.0
// Internal: the element loop of host-memory all-reduces (the CPU communicator's, and the
// cross-process exchange's, whose folds must give the same bits): n inputs combined element by
// element in rank order with a rule of element_rules.h, in the compute type.
//
//   // acc[i] = in[0][off + i] + in[1][off + i] + ... + in[n - 1][off + i], left to right
//   fold_inputs<float, SumRule>(acc, in, n, off, len, /*first=*/true);
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>

#include "backend/element_rules.h"

namespace spmd::internal {

// acc[i] = op(...op(op(acc[i], in[0][i]), in[1][i])..., in[K-1][i]) over [offset, offset + len)
// of the inputs, or without acc[i] when kFirst: K inputs folded while acc[i] sits in a register,
// so the loop vectorizes and touches the accumulator once per K inputs. (__restrict and the
// inputs' pointers copied out first: otherwise the compiler must assume a store to acc may move
// them, and checks every pair of streams for overlap.)
template <int K, bool kFirst, class T, class Rule>
void fold_pass(ComputeOf<T>* __restrict acc, const StorageOf<T>* const* in, int64_t offset,
               int64_t len) {
  const StorageOf<T>* __restrict x[K];
  for (int q = 0; q < K; ++q) x[q] = in[q] + offset;
  for (int64_t i = 0; i < len; ++i) {
    ComputeOf<T> a = load<T>(&x[0][i]);
    if constexpr (!kFirst) a = Rule::apply(acc[i], a);
    for (int q = 1; q < K; ++q) a = Rule::apply(a, load<T>(&x[q][i]));
    acc[i] = a;
  }
}

template <class T, class Rule, int... K>
void fold_pass_of(int k, ComputeOf<T>* acc, const StorageOf<T>* const* in, int64_t offset,
                  int64_t len, bool first, std::integer_sequence<int, K...>) {
  auto run = [&]<int kInputs>() {
    first ? fold_pass<kInputs, true, T, Rule>(acc, in, offset, len)
          : fold_pass<kInputs, false, T, Rule>(acc, in, offset, len);
  };
  ((k == K + 1 ? run.template operator()<K + 1>() : void()), ...);
}

// acc[i] = in[0][offset + i] op in[1][offset + i] op ... (left to right), starting from acc[i]
// itself unless `first`, for i in [0, len): up to 8 inputs a pass over acc, which should be a
// block that stays in L1 (for half types a float staging block; for the others the output may
// be folded in place). acc overlaps no input.
template <class T, class Rule>
void fold_inputs(ComputeOf<T>* acc, const StorageOf<T>* const* in, int n, int64_t offset,
                 int64_t len, bool first) {
  constexpr int kFan = 8;
  for (int q = 0; q < n; q += kFan) {
    fold_pass_of<T, Rule>(std::min(kFan, n - q), acc, in + q, offset, len, first && q == 0,
                          std::make_integer_sequence<int, kFan>{});
  }
}

}  // namespace spmd::internal
