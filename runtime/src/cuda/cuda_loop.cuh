// SPDX-License-Identifier: Apache-2.0
// Internal, CUDA sources only: what the CUDA kernel files (cuda_kernels.cu,
// cuda_complex_kernels.cu) share: a view's geometry, the grid-stride elementwise kernel and its
// launch, the reduction with one thread per output, the pairwise sum of long rows, and the error
// for an op a dtype lacks.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>

#include "backend/element_rules.h"
#include "backend/kernels.h"
#include "cuda/cuda_check.h"
#include "cuda/stream_scratch.h"
#include "spmd/errors.h"

namespace spmd::internal::cuda {

// Views of more dimensions than this, after merging, are refused (NotImplementedError).
constexpr int kMaxDims = 16;
constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65535;

// One shape and N operands' strides over it (elements), unit dimensions dropped and dimensions
// contiguous in every operand merged, so that the row-major order of the elements is kept.
template <int N>
struct Geometry {
  int ndim = 0;
  int64_t count = 1;  // elements
  int64_t shape[kMaxDims] = {};
  int64_t strides[N][kMaxDims] = {};
};

template <int N>
Geometry<N> geometry(const Shape& shape, const std::array<const Strides*, N>& strides) {
  Geometry<N> g;
  for (size_t d = 0; d < shape.size(); ++d) {
    g.count *= shape[d];
    if (shape[d] == 1) continue;
    bool merge = g.ndim > 0;
    for (int k = 0; k < N && merge; ++k) {
      merge = g.strides[k][g.ndim - 1] == (*strides[k])[d] * shape[d];
    }
    if (!merge) {
      if (g.ndim == kMaxDims) {
        throw NotImplementedError("the CUDA kernels take views of up to " +
                                  std::to_string(kMaxDims) + " non-contiguous dimensions");
      }
      g.shape[g.ndim++] = 1;
    }
    g.shape[g.ndim - 1] *= shape[d];
    for (int k = 0; k < N; ++k) g.strides[k][g.ndim - 1] = (*strides[k])[d];
  }
  return g;
}

// Each operand's offset of the element with row-major index i.
template <int N>
__device__ void offsets_of(const Geometry<N>& g, int64_t i, int64_t (&offsets)[N]) {
  for (int k = 0; k < N; ++k) offsets[k] = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t index = i % g.shape[d];
    i /= g.shape[d];
    for (int k = 0; k < N; ++k) offsets[k] += index * g.strides[k][d];
  }
}

template <int N, class Op>
__global__ void elementwise(Geometry<N> g, Op op) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.count;
       i += step) {
    int64_t offsets[N];
    offsets_of(g, i, offsets);
    op(offsets);
  }
}

inline int64_t blocks_for(int64_t count) {
  return std::min<int64_t>((count + kThreads - 1) / kThreads, kMaxBlocks);
}

template <int N, class Op>
void launch(cudaStream_t stream, const Geometry<N>& g, const Op& op, const char* kernel) {
  if (g.count == 0) return;
  elementwise<N><<<static_cast<unsigned>(blocks_for(g.count)), kThreads, 0, stream>>>(g, op);
  check(cudaGetLastError(), std::string("launching the ") + kernel + " kernel");
}

template <class U>
struct FillBits {
  U* y;
  U bits;
  __device__ void operator()(const int64_t (&o)[1]) const { y[o[0]] = bits; }
};

// The geometries of a reduction of x's trailing `num_reduced` dimensions: the outputs (outer)
// and each output's range (inner), with x's strides.
inline std::pair<Geometry<1>, Geometry<1>> reduce_geometry(const ConstView& x, int num_reduced) {
  const auto split = static_cast<int64_t>(x.shape.size()) - num_reduced;
  const Shape outer_shape(x.shape.begin(), x.shape.begin() + split);
  const Shape inner_shape(x.shape.begin() + split, x.shape.end());
  const Strides outer_strides(x.strides.begin(), x.strides.begin() + split);
  const Strides inner_strides(x.strides.begin() + split, x.strides.end());
  return {geometry<1>(outer_shape, {&outer_strides}), geometry<1>(inner_shape, {&inner_strides})};
}

// Reductions: thread i folds output element i's range in row-major order.
template <class T, class Fold>
__global__ void reduce_kernel(Geometry<1> outer, Geometry<1> inner, const StorageOf<T>* x,
                              Fold fold) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < outer.count;
       i += step) {
    int64_t base[1];
    offsets_of(outer, i, base);
    auto state = fold.init();
    int64_t index[kMaxDims] = {};
    int64_t offset = base[0];
    for (int64_t j = 0; j < inner.count; ++j) {
      fold.step(state, load<T>(x + offset));
      for (int d = inner.ndim - 1; d >= 0; --d) {
        offset += inner.strides[0][d];
        if (++index[d] < inner.shape[d]) break;
        offset -= inner.strides[0][d] * inner.shape[d];
        index[d] = 0;
      }
    }
    fold.finish(i, state);
  }
}

template <class T, class Fold>
void launch_reduce(cudaStream_t stream, const Geometry<1>& outer, const Geometry<1>& inner,
                   const void* x, const Fold& fold) {
  if (outer.count == 0) return;
  reduce_kernel<T><<<static_cast<unsigned>(blocks_for(outer.count)), kThreads, 0, stream>>>(
      outer, inner, static_cast<const StorageOf<T>*>(x), fold);
  check(cudaGetLastError(), "launching the reduce kernel");
}

// Rows shorter than this take one thread each (reduce_kernel); longer ones a block.
constexpr int64_t kParallelRowMin = 4096;

// Float (and complex) sums of long rows, many threads per row, in exactly the CPU's order
// (PairwiseSum in backend/element_ops.h): blocks of kPairwiseBlock elements are summed from +0 in
// order; block sums combine as a bottom-up binary tree over aligned power-of-two groups
// (node (L, j) covers blocks [j 2^L, (j+1) 2^L), left + right); the remainder's sum then takes
// the complete groups, lowest level first: sum = node + sum. One CUDA block per row; node (L, j)
// lives at s[j << L].
constexpr int64_t kPairwiseBlock = 16;

template <class T>
__global__ void pairwise_sum_rows(Geometry<1> outer, Geometry<1> inner, const StorageOf<T>* x,
                                  StorageOf<T>* y, ComputeOf<T>* scratch) {
  using C = ComputeOf<T>;
  const int64_t n = inner.count, m = n / kPairwiseBlock;
  C* const s = scratch + blockIdx.x * m;
  auto element = [&](int64_t base, int64_t e) {
    int64_t offset[1];
    offsets_of(inner, e, offset);
    return load<T>(x + base + offset[0]);
  };
  for (int64_t row = blockIdx.x; row < outer.count; row += gridDim.x) {
    int64_t base[1];
    offsets_of(outer, row, base);
    for (int64_t j = threadIdx.x; j < m; j += blockDim.x) {
      C acc = 0;
      for (int64_t e = 0; e < kPairwiseBlock; ++e) acc += element(base[0], j * kPairwiseBlock + e);
      s[j] = acc;
    }
    __syncthreads();
    for (int level = 1; (m >> level) > 0; ++level) {
      for (int64_t j = threadIdx.x; j < (m >> level); j += blockDim.x) {
        s[j << level] = s[j << level] + s[(j << level) + (int64_t{1} << (level - 1))];
      }
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      C sum = 0;
      for (int64_t e = m * kPairwiseBlock; e < n; ++e) sum += element(base[0], e);
      for (int level = 0; (m >> level) > 0; ++level) {
        if ((m >> level) & 1) sum = s[((m >> level) - 1) << level] + sum;
      }
      store<T>(y + row, sum);
    }
    __syncthreads();  // s is reused by the next row
  }
}

template <class T>
void launch_pairwise_sum(cudaStream_t stream, const Geometry<1>& outer, const Geometry<1>& inner,
                         const void* x, void* y) {
  if (outer.count == 0) return;
  const int64_t blocks = std::min<int64_t>(outer.count, 1024);
  StreamScratch scratch(stream, sizeof(ComputeOf<T>) * blocks * (inner.count / kPairwiseBlock));
  pairwise_sum_rows<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      outer, inner, static_cast<const StorageOf<T>*>(x), static_cast<StorageOf<T>*>(y),
      scratch.as<ComputeOf<T>>());
  check(cudaGetLastError(), "launching the pairwise sum kernel");
}

[[noreturn]] inline void unsupported(const char* kernel, int op, DType dt) {
  throw TypeError(std::string("cuda kernels: ") + kernel + " op " + std::to_string(op) +
                  " is not defined for " + std::string(dtype_name(dt)));
}

}  // namespace spmd::internal::cuda
