// SPDX-License-Identifier: Apache-2.0
// The CUDA backend's op kernels (cuda_kernels.h).
//
// Every elementwise kernel is one grid-stride loop over the output's row-major index, with the
// operands' dimensions merged first as the CPU kernels merge them; each element is computed by
// the same scalar rule as on the CPU (backend/element_ops.h). A reduction gives each output
// element one thread that folds its range in the CPU's order (pairwise sums included), or, for
// rows of 4096 elements and more, a block whose threads combine in a way that keeps the CPU's
// bits (the pairwise order for float sums, exact merges through CUB's block reduction for the
// rest), so reductions match the CPU backend bit for bit. Float matmul packs its operands densely
// in the compute type and calls cuBLAS's strided-batched gemm; integer and bool matmul is an
// exact loop.
#include <algorithm>
#include <array>
#include <cub/block/block_reduce.cuh>
#include <cuda/std/complex>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>

#include "backend/element_ops.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_complex_kernels.h"
#include "cuda/cuda_kernels.h"
#include "cuda/cuda_loop.cuh"
#include "cuda/stream_scratch.h"
#include "spmd/errors.h"

namespace spmd::internal::cuda {
namespace {

// ---------------------------------------------------------------------------------------------
// Element operations, one functor per kernel; operand 0 is the output.

template <class U>
struct MoveBits {
  U* y;
  const U* x;
  __device__ void operator()(const int64_t (&o)[2]) const { y[o[0]] = x[o[1]]; }
};

template <class D, class S>
struct Convert {
  StorageOf<D>* y;
  const StorageOf<S>* x;
  __device__ void operator()(const int64_t (&o)[2]) const {
    store<D>(y + o[0], convert<D>(load<S>(x + o[1])));
  }
};

template <class T>
struct Iota {
  StorageOf<T>* y;
  // y is dense and 1-D, so the offset is the index.
  __device__ void operator()(const int64_t (&o)[1]) const { store<T>(y + o[0], convert<T>(o[0])); }
};

template <class T>
struct Unary {
  UnaryOp op;
  StorageOf<T>* y;
  const StorageOf<T>* x;
  __device__ void operator()(const int64_t (&o)[2]) const {
    store<T>(y + o[0], apply(load<T>(x + o[1])));
  }
  __device__ ComputeOf<T> apply(ComputeOf<T> v) const {
    using C = ComputeOf<T>;
    switch (op) {
      case UnaryOp::kNeg:
        return wrap_neg(v);
      case UnaryOp::kAbs:
        return absolute(v);
      case UnaryOp::kSign:
        return sign(v);
      case UnaryOp::kSquare:
        return wrap_mul(v, v);
      case UnaryOp::kLogicalNot:
        return C(v == 0);
      default:
        break;
    }
    if constexpr (kIsFloat<C>) {
      switch (op) {
        case UnaryOp::kExp:
          return std::exp(v);
        case UnaryOp::kLog:
          return std::log(v);
        case UnaryOp::kSqrt:
          return std::sqrt(v);
        case UnaryOp::kTanh:
          return std::tanh(v);
        case UnaryOp::kFloor:
          return std::floor(v);
        case UnaryOp::kCeil:
          return std::ceil(v);
        case UnaryOp::kRound:
          return std::nearbyint(v);
        case UnaryOp::kErfInv:
          return erfinv(v);
        default:
          return library_math(op, v);
      }
    }
    return v;  // not reached: unary_defined() refused the op on the host
  }
};

template <class T>
struct Binary {
  BinaryOp op;
  void* y;
  const StorageOf<T>* a;
  const StorageOf<T>* b;
  __device__ void operator()(const int64_t (&o)[3]) const {
    using C = ComputeOf<T>;
    const C p = load<T>(a + o[1]);
    const C q = load<T>(b + o[2]);
    auto* const flag = static_cast<StorageOf<bool>*>(y) + o[0];
    switch (op) {
      case BinaryOp::kEq:
        return store<bool>(flag, p == q);
      case BinaryOp::kNe:
        return store<bool>(flag, p != q);
      case BinaryOp::kLt:
        return store<bool>(flag, p < q);
      case BinaryOp::kLe:
        return store<bool>(flag, p <= q);
      case BinaryOp::kGt:
        return store<bool>(flag, p > q);
      case BinaryOp::kGe:
        return store<bool>(flag, p >= q);
      default:
        store<T>(static_cast<StorageOf<T>*>(y) + o[0], arith(p, q));
    }
  }
  __device__ ComputeOf<T> arith(ComputeOf<T> p, ComputeOf<T> q) const {
    using C = ComputeOf<T>;
    switch (op) {
      case BinaryOp::kAdd:
        return wrap_add(p, q);
      case BinaryOp::kSub:
        return wrap_sub(p, q);
      case BinaryOp::kMul:
        return wrap_mul(p, q);
      case BinaryOp::kDiv:
        return trunc_div(p, q);
      case BinaryOp::kFloorDiv:
        return py_floordiv(p, q);
      case BinaryOp::kRem:
        return py_rem(p, q);
      case BinaryOp::kPow:
        return power(p, q);
      case BinaryOp::kMax:
        return max_nan(p, q);
      case BinaryOp::kMin:
        return min_nan(p, q);
      default:
        break;
    }
    if constexpr (kIsFloat<C>) {
      if (op == BinaryOp::kAtan2) return atan2(p, q);
    }
    if constexpr (std::is_integral_v<C>) {
      switch (op) {
        case BinaryOp::kAnd:
          return C(p & q);
        case BinaryOp::kOr:
          return C(p | q);
        case BinaryOp::kXor:
          return C(p ^ q);
        default:
          break;
      }
    }
    return p;  // not reached: binary_defined() refused the op on the host
  }
};

template <class U>
struct Select {
  U* y;
  const StorageOf<bool>* cond;
  const U* a;
  const U* b;
  __device__ void operator()(const int64_t (&o)[4]) const {
    y[o[0]] = cond[o[1]] != 0 ? a[o[2]] : b[o[3]];
  }
};

// Loads T, stores its compute type (matmul's packing) ...
template <class T>
struct Widen {
  ComputeOf<T>* y;
  const StorageOf<T>* x;
  __device__ void operator()(const int64_t (&o)[2]) const { y[o[0]] = load<T>(x + o[1]); }
};

// ... and back, rounding once.
template <class T>
struct Narrow {
  StorageOf<T>* y;
  const ComputeOf<T>* x;
  __device__ void operator()(const int64_t (&o)[2]) const { store<T>(y + o[0], x[o[1]]); }
};

// ---------------------------------------------------------------------------------------------
// Reductions: the folds of reduce_kernel (cuda_loop.cuh), one thread per output, and the kernels
// for long rows.

template <class T>
struct PairwiseFold {
  StorageOf<T>* y;
  __device__ PairwiseSum<ComputeOf<T>> init() const { return {}; }
  __device__ void step(PairwiseSum<ComputeOf<T>>& s, ComputeOf<T> v) const { s.add(v); }
  __device__ void finish(int64_t i, const PairwiseSum<ComputeOf<T>>& s) const {
    store<T>(y + i, s.result());
  }
};

// Folds with a plain accumulator: sum (integers), prod, max, min, any, all.
template <class T>
struct ValueFold {
  ReduceOp op;
  StorageOf<T>* y;
  __device__ ComputeOf<T> init() const {
    using C = ComputeOf<T>;
    switch (op) {
      case ReduceOp::kProd:
      case ReduceOp::kAll:
        return C{1};
      case ReduceOp::kMax:
        return lowest<C>();
      case ReduceOp::kMin:
        return highest<C>();
      default:
        return C{0};
    }
  }
  __device__ void step(ComputeOf<T>& s, ComputeOf<T> v) const {
    switch (op) {
      case ReduceOp::kProd:
        s = wrap_mul(s, v);
        return;
      case ReduceOp::kMax:
        s = max_nan(s, v);
        return;
      case ReduceOp::kMin:
        s = min_nan(s, v);
        return;
      case ReduceOp::kAny:
        s = s != 0 || v != 0;
        return;
      case ReduceOp::kAll:
        s = s != 0 && v != 0;
        return;
      default:
        s = wrap_add(s, v);
    }
  }
  __device__ void finish(int64_t i, ComputeOf<T> s) const { store<T>(y + i, s); }
};

template <class T, bool kMax>
struct ArgFold {
  int32_t* y;
  __device__ ArgBest<ComputeOf<T>, kMax> init() const { return {}; }
  __device__ void step(ArgBest<ComputeOf<T>, kMax>& s, ComputeOf<T> v) const { s.add(v); }
  __device__ void finish(int64_t i, const ArgBest<ComputeOf<T>, kMax>& s) const {
    y[i] = static_cast<int32_t>(s.index);
  }
};

// Long rows of the folds whose result does not depend on the grouping, many threads per row:
// integer sums and products wrap (exact in any order), max/min/any/all of integers and bools, and
// float max/min and argmax/argmin, which keep the first element of a tie (-0 before +0, the first
// NaN) through the element index they carry. Thread t folds elements t, t + blockDim, ... of its
// row (reads coalesce), then the block merges the threads' states (cub::BlockReduce); the result
// equals the CPU's one-by-one fold bit for bit. (Float sums keep the CPU's pairwise order:
// launch_pairwise_sum; float products, whose rounding depends on the order, fold one thread per
// row.)

// Carries a fold of plain values (any grouping gives the same bits).
template <class T>
struct UnorderedFold {
  using State = ComputeOf<T>;
  ValueFold<T> fold;
  __device__ State init() const { return fold.init(); }
  __device__ void step(State& s, ComputeOf<T> v, int64_t) const { fold.step(s, v); }
  __device__ void merge(State& s, const State& other) const { fold.step(s, other); }
  __device__ void finish(int64_t i, const State& s) const { fold.finish(i, s); }
};

// The best element so far and its index; ties and NaNs go to the lower index, as in ArgBest.
template <class C, bool kMax>
struct Ranked {
  C best;
  int64_t index;                                                  // -1: no element yet
  __device__ bool beats(C v, int64_t i, const Ranked& o) const {  // (v, i) over o
    if (o.index < 0) return true;
    if constexpr (kIsFloat<C>) {
      if (std::isnan(o.best) || std::isnan(v)) {
        return std::isnan(v) && (!std::isnan(o.best) || i < o.index);
      }
    }
    if (v == o.best) return i < o.index;
    return kMax ? o.best < v : v < o.best;
  }
};

// argmax/argmin (`kIndex`) or float max/min (the value), through Ranked.
template <class T, bool kMax, bool kIndex>
struct OrderedFold {
  using C = ComputeOf<T>;
  using State = Ranked<C, kMax>;
  void* y;
  __device__ State init() const { return {C{}, -1}; }
  __device__ void step(State& s, C v, int64_t i) const {
    if (s.beats(v, i, s)) s = {v, i};
  }
  __device__ void merge(State& s, const State& other) const {
    if (other.index >= 0 && s.beats(other.best, other.index, s)) s = other;
  }
  __device__ void finish(int64_t i, const State& s) const {
    if constexpr (kIndex) {
      static_cast<int32_t*>(y)[i] = static_cast<int32_t>(s.index < 0 ? 0 : s.index);
    } else {
      // An empty row gives the identity, as the one-thread fold (ValueFold's init) does.
      const C empty = kMax ? lowest<C>() : highest<C>();
      store<T>(static_cast<StorageOf<T>*>(y) + i, s.index < 0 ? empty : s.best);
    }
  }
};

// A fold's merge as the binary operator CUB's block reduction takes.
template <class Fold>
struct MergeOf {
  Fold fold;
  __device__ typename Fold::State operator()(typename Fold::State a,
                                             const typename Fold::State& b) const {
    fold.merge(a, b);
    return a;
  }
};

template <class T, class Fold>
__global__ void reduce_rows_parallel(Geometry<1> outer, Geometry<1> inner, const StorageOf<T>* x,
                                     Fold fold) {
  using BlockReduce = cub::BlockReduce<typename Fold::State, kThreads>;
  __shared__ typename BlockReduce::TempStorage merging;
  for (int64_t row = blockIdx.x; row < outer.count; row += gridDim.x) {
    int64_t base[1];
    offsets_of(outer, row, base);
    typename Fold::State s = fold.init();
    for (int64_t e = threadIdx.x; e < inner.count; e += blockDim.x) {
      int64_t offset[1];
      offsets_of(inner, e, offset);
      fold.step(s, load<T>(x + base[0] + offset[0]), e);
    }
    // The merges are exact whatever their grouping, so CUB's is as good as any.
    const typename Fold::State total = BlockReduce(merging).Reduce(s, MergeOf<Fold>{fold});
    if (threadIdx.x == 0) fold.finish(row, total);
    __syncthreads();  // `merging` is reused by the next row
  }
}

template <class T, class Fold>
void launch_parallel_reduce(cudaStream_t stream, const Geometry<1>& outer, const Geometry<1>& inner,
                            const void* x, const Fold& fold) {
  if (outer.count == 0) return;
  const int64_t blocks = std::min<int64_t>(outer.count, 1024);
  reduce_rows_parallel<T><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      outer, inner, static_cast<const StorageOf<T>*>(x), fold);
  check(cudaGetLastError(), "launching the parallel reduce kernel");
}

// ---------------------------------------------------------------------------------------------
// Exact matmul (integers, bool): thread per output element, k in increasing order as on the CPU.

// A [batch, rows, cols] operand's strides.
struct Strides3 {
  int64_t batch, row, col;
};

template <class T>
__global__ void loop_matmul_kernel(int64_t batch, int64_t m, int64_t n, int64_t k,
                                   const StorageOf<T>* a, const Strides3 sa, const StorageOf<T>* b,
                                   const Strides3 sb, StorageOf<T>* c) {
  using C = ComputeOf<T>;
  const int64_t total = batch * m * n;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const int64_t bi = e / (m * n), i = e / n % m, j = e % n;
    const StorageOf<T>* pa = a + bi * sa.batch + i * sa.row;
    const StorageOf<T>* pb = b + bi * sb.batch + j * sb.col;
    C acc{0};
    for (int64_t kk = 0; kk < k; ++kk) {
      const C x = load<T>(pa + kk * sa.col), y = load<T>(pb + kk * sb.row);
      if constexpr (std::is_same_v<T, bool>) {
        acc |= x & y;
      } else {
        acc = wrap_add(acc, wrap_mul(x, y));
      }
    }
    store<T>(c + e, acc);
  }
}

// c = a @ b per batch through cuBLAS, in row-major terms: cuBLAS is column-major, so it computes
// c^T = b^T a^T on the same dense buffers. C is float, double or cuda::std::complex of either
// (the layout of cuComplex and cuDoubleComplex).
template <class C>
void gemm(cublasHandle_t blas, int64_t batch, int64_t m, int64_t n, int64_t k, const C* a,
          const C* b, int64_t b_stride, C* c) {
  const C one(1), zero(0);
  const auto run = [&](auto cublas_gemm, const char* name, auto* element) {
    using E = std::remove_pointer_t<decltype(element)>;
    const auto e = [](const C* p) { return reinterpret_cast<const E*>(p); };
    check(cublas_gemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                      static_cast<int>(k), e(&one), e(b), static_cast<int>(n), b_stride, e(a),
                      static_cast<int>(k), m * k, e(&zero), reinterpret_cast<E*>(c),
                      static_cast<int>(n), m * n, static_cast<int>(batch)),
          name);
  };
  if constexpr (std::is_same_v<C, float>) {
    run(cublasSgemmStridedBatched, "cublasSgemmStridedBatched", static_cast<float*>(nullptr));
  } else if constexpr (std::is_same_v<C, double>) {
    run(cublasDgemmStridedBatched, "cublasDgemmStridedBatched", static_cast<double*>(nullptr));
  } else if constexpr (std::is_same_v<C, ::cuda::std::complex<float>>) {
    run(cublasCgemmStridedBatched, "cublasCgemmStridedBatched", static_cast<cuComplex*>(nullptr));
  } else {
    run(cublasZgemmStridedBatched, "cublasZgemmStridedBatched",
        static_cast<cuDoubleComplex*>(nullptr));
  }
}

// Packs a view into a dense buffer of its compute type.
template <class T>
void widen(cudaStream_t stream, const ConstView& v, ComputeOf<T>* out) {
  const Strides dense = dense_strides(v.shape);
  launch<2>(stream, geometry<2>(v.shape, {&dense, &v.strides}),
            Widen<T>{out, static_cast<const StorageOf<T>*>(v.data)}, "matmul packing");
}

// A view's data when it is dense in its compute type, else a dense copy of it in `scratch`.
template <class T>
const ComputeOf<T>* packed(cudaStream_t stream, const ConstView& v,
                           std::optional<StreamScratch>& scratch) {
  using C = ComputeOf<T>;
  if (std::is_same_v<C, StorageOf<T>> && v.strides == dense_strides(v.shape)) {
    return static_cast<const C*>(v.data);
  }
  scratch.emplace(stream, sizeof(C) * shape_size(v.shape));
  widen<T>(stream, v, scratch->as<C>());
  return scratch->as<C>();
}

template <class T>
void blas_matmul(cudaStream_t stream, cublasHandle_t blas, const ConstView& a, const ConstView& b,
                 const MutView& c) {
  using C = ComputeOf<T>;
  const int64_t batch = c.shape[0], m = c.shape[1], n = c.shape[2], k = a.shape[2];
  // cuBLAS refuses leading dimensions of 0 (ld >= max(1, rows)), which empty operands would pass.
  if (batch == 0 || m == 0 || n == 0) return;
  if (k == 0) {
    check(cudaMemsetAsync(c.data, 0, sizeof(StorageOf<T>) * batch * m * n, stream),
          "cudaMemsetAsync");  // +0 in every float format
    return;
  }
  const bool shared_b = b.strides[0] == 0;  // one b for every batch (a broadcast)
  ConstView b_used = b;
  if (shared_b) {
    b_used.shape[0] = 1;
    b_used.strides[0] = k * n;
  }
  std::optional<StreamScratch> sa, sb;
  const C* const pa = packed<T>(stream, a, sa);
  const C* const pb = packed<T>(stream, b_used, sb);
  if constexpr (std::is_same_v<C, StorageOf<T>>) {
    gemm(blas, batch, m, n, k, pa, pb, shared_b ? 0 : k * n, static_cast<C*>(c.data));
  } else {
    StreamScratch pc(stream, sizeof(C) * batch * m * n);
    gemm(blas, batch, m, n, k, pa, pb, shared_b ? 0 : k * n, pc.as<C>());
    const Strides dense = dense_strides(c.shape);
    launch<2>(stream, geometry<2>(c.shape, {&dense, &dense}),
              Narrow<T>{static_cast<StorageOf<T>*>(c.data), pc.as<C>()}, "matmul rounding");
  }
}

bool unary_defined(UnaryOp op, DType dt) {
  switch (op) {
    case UnaryOp::kNeg:
    case UnaryOp::kAbs:
    case UnaryOp::kSign:
    case UnaryOp::kSquare:
      return true;
    case UnaryOp::kLogicalNot:
      return dt == DType::kBool;
    default:
      return is_floating(dt);
  }
}

bool binary_defined(BinaryOp op, DType dt) {
  const bool bitwise = op == BinaryOp::kAnd || op == BinaryOp::kOr || op == BinaryOp::kXor;
  if (op == BinaryOp::kAtan2) return is_floating(dt);
  return !bitwise || !is_floating(dt);
}

// ---------------------------------------------------------------------------------------------
// Collectives among devices of one GPU.

struct MemberInputs {
  const void* in[kMaxFoldMembers];
};

template <class T, class Rule>
__global__ void fold_members_kernel(MemberInputs ins, int n, StorageOf<T>* out, int64_t outer,
                                    int64_t inner, int64_t in_stride, int64_t in_offset) {
  const int64_t total = outer * inner;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total;
       e += step) {
    const int64_t at = e / inner * in_stride + in_offset + e % inner;
    ComputeOf<T> acc = load<T>(static_cast<const StorageOf<T>*>(ins.in[0]) + at);
    for (int q = 1; q < n; ++q) {
      acc = Rule::apply(acc, load<T>(static_cast<const StorageOf<T>*>(ins.in[q]) + at));
    }
    store<T>(out + e, acc);
  }
}

template <class Rule>
void fold_with(cudaStream_t stream, DType dtype, const MemberInputs& ins, int n, void* out,
               int64_t outer, int64_t inner, int64_t in_stride, int64_t in_offset) {
  dispatch(dtype, [&]<class T>(std::type_identity<T>) {
    fold_members_kernel<T, Rule>
        <<<static_cast<unsigned>(blocks_for(outer * inner)), kThreads, 0, stream>>>(
            ins, n, static_cast<StorageOf<T>*>(out), outer, inner, in_stride, in_offset);
  });
}

}  // namespace

void fold_members(cudaStream_t stream, ReduceKind op, DType dtype, const void* const* ins, int n,
                  void* out, int64_t outer, int64_t inner, int64_t in_stride, int64_t in_offset) {
  if (n < 1 || n > kMaxFoldMembers) {
    throw NotImplementedError("a collective among " + std::to_string(n) +
                              " devices of one GPU (at most " + std::to_string(kMaxFoldMembers) +
                              ")");
  }
  if (outer * inner == 0) return;
  MemberInputs table{};
  for (int q = 0; q < n; ++q) table.in[q] = ins[q];
  switch (op) {
    case ReduceKind::kSum:
      fold_with<SumRule>(stream, dtype, table, n, out, outer, inner, in_stride, in_offset);
      break;
    case ReduceKind::kMax:
      fold_with<MaxRule>(stream, dtype, table, n, out, outer, inner, in_stride, in_offset);
      break;
    case ReduceKind::kMin:
      fold_with<MinRule>(stream, dtype, table, n, out, outer, inner, in_stride, in_offset);
      break;
  }
  check(cudaGetLastError(), "launching the collective reduction kernel");
}

void CudaKernels::copy(const ConstView& src, const MutView& dst) const {
  const Geometry<2> g = geometry<2>(dst.shape, {&dst.strides, &src.strides});
  if (src.dtype == dst.dtype) {
    // Moves bits, so NaN payloads and float16 patterns survive unchanged.
    return dispatch_bits(dst.dtype, [&]<class U>(std::type_identity<U>) {
      launch<2>(stream_, g, MoveBits<U>{static_cast<U*>(dst.data), static_cast<const U*>(src.data)},
                "copy");
    });
  }
  if (is_complex(src.dtype) || is_complex(dst.dtype)) return complex_copy(stream_, src, dst);
  dispatch(src.dtype, [&]<class S>(std::type_identity<S>) {
    dispatch(dst.dtype, [&]<class D>(std::type_identity<D>) {
      launch<2>(stream_, g,
                Convert<D, S>{static_cast<StorageOf<D>*>(dst.data),
                              static_cast<const StorageOf<S>*>(src.data)},
                "convert");
    });
  });
}

void CudaKernels::fill(const MutView& dst, Scalar value) const {
  if (is_complex(dst.dtype)) return complex_fill(stream_, dst, value);
  dispatch(dst.dtype, [&]<class T>(std::type_identity<T>) {
    // The value is converted on the host by the same rule as on the CPU, then its bits are
    // written.
    StorageOf<T> bits{};
    store<T>(&bits, std::visit([](auto v) { return convert<T>(+v); }, value));
    launch<1>(stream_, geometry<1>(dst.shape, {&dst.strides}),
              FillBits<StorageOf<T>>{static_cast<StorageOf<T>*>(dst.data), bits}, "fill");
  });
}

void CudaKernels::iota(const MutView& dst) const {
  if (is_complex(dst.dtype)) return complex_iota(stream_, dst);
  dispatch(dst.dtype, [&]<class T>(std::type_identity<T>) {
    launch<1>(stream_, geometry<1>(dst.shape, {&dst.strides}),
              Iota<T>{static_cast<StorageOf<T>*>(dst.data)}, "iota");
  });
}

void CudaKernels::unary(UnaryOp op, const ConstView& x, const MutView& y) const {
  if (is_complex(x.dtype)) return complex_unary(stream_, op, x, y);
  if (!unary_defined(op, x.dtype)) unsupported("unary", static_cast<int>(op), x.dtype);
  dispatch(x.dtype, [&]<class T>(std::type_identity<T>) {
    launch<2>(
        stream_, geometry<2>(y.shape, {&y.strides, &x.strides}),
        Unary<T>{op, static_cast<StorageOf<T>*>(y.data), static_cast<const StorageOf<T>*>(x.data)},
        "unary");
  });
}

void CudaKernels::binary(BinaryOp op, const ConstView& a, const ConstView& b,
                         const MutView& y) const {
  if (is_complex(a.dtype)) return complex_binary(stream_, op, a, b, y);
  if (!binary_defined(op, a.dtype)) unsupported("binary", static_cast<int>(op), a.dtype);
  dispatch(a.dtype, [&]<class T>(std::type_identity<T>) {
    launch<3>(stream_, geometry<3>(y.shape, {&y.strides, &a.strides, &b.strides}),
              Binary<T>{op, y.data, static_cast<const StorageOf<T>*>(a.data),
                        static_cast<const StorageOf<T>*>(b.data)},
              "binary");
  });
}

void CudaKernels::select(const ConstView& cond, const ConstView& a, const ConstView& b,
                         const MutView& y) const {
  dispatch_bits(y.dtype, [&]<class U>(std::type_identity<U>) {
    launch<4>(stream_, geometry<4>(y.shape, {&y.strides, &cond.strides, &a.strides, &b.strides}),
              Select<U>{static_cast<U*>(y.data), static_cast<const StorageOf<bool>*>(cond.data),
                        static_cast<const U*>(a.data), static_cast<const U*>(b.data)},
              "select");
  });
}

void CudaKernels::reduce(ReduceOp op, const ConstView& x, int num_reduced, const MutView& y) const {
  if (is_complex(x.dtype)) return complex_reduce(stream_, op, x, num_reduced, y);
  const auto [outer, inner] = reduce_geometry(x, num_reduced);
  dispatch(x.dtype, [&]<class T>(std::type_identity<T>) {
    using C = ComputeOf<T>;
    auto* const out = static_cast<StorageOf<T>*>(y.data);
    const bool long_rows = inner.count >= kParallelRowMin;
    switch (op) {
      case ReduceOp::kArgMax:
        if (long_rows) {
          return launch_parallel_reduce<T>(stream_, outer, inner, x.data,
                                           OrderedFold<T, true, true>{y.data});
        }
        return launch_reduce<T>(stream_, outer, inner, x.data,
                                ArgFold<T, true>{static_cast<int32_t*>(y.data)});
      case ReduceOp::kArgMin:
        if (long_rows) {
          return launch_parallel_reduce<T>(stream_, outer, inner, x.data,
                                           OrderedFold<T, false, true>{y.data});
        }
        return launch_reduce<T>(stream_, outer, inner, x.data,
                                ArgFold<T, false>{static_cast<int32_t*>(y.data)});
      case ReduceOp::kSum:
        if constexpr (kIsFloat<C>) {
          if (inner.count >= kParallelRowMin) {
            return launch_pairwise_sum<T>(stream_, outer, inner, x.data, y.data);
          }
          return launch_reduce<T>(stream_, outer, inner, x.data, PairwiseFold<T>{out});
        }
        [[fallthrough]];
      default:
        if (long_rows && kIsFloat<C> && (op == ReduceOp::kMax || op == ReduceOp::kMin)) {
          return op == ReduceOp::kMax
                     ? launch_parallel_reduce<T>(stream_, outer, inner, x.data,
                                                 OrderedFold<T, true, false>{out})
                     : launch_parallel_reduce<T>(stream_, outer, inner, x.data,
                                                 OrderedFold<T, false, false>{out});
        }
        if (long_rows && (!kIsFloat<C> || op == ReduceOp::kAny || op == ReduceOp::kAll)) {
          return launch_parallel_reduce<T>(stream_, outer, inner, x.data,
                                           UnorderedFold<T>{ValueFold<T>{op, out}});
        }
        return launch_reduce<T>(stream_, outer, inner, x.data, ValueFold<T>{op, out});
    }
  });
}

void CudaKernels::matmul(const ConstView& a, const ConstView& b, const MutView& c) const {
  const int64_t batch = c.shape[0], m = c.shape[1], n = c.shape[2], k = a.shape[2];
  const int64_t limit = std::numeric_limits<int>::max();  // cuBLAS counts in int
  const bool fits_blas = m <= limit && n <= limit && k <= limit && batch <= limit;
  if (is_complex(a.dtype)) {
    if (!fits_blas) {
      throw NotImplementedError(
          "a complex matmul with a dimension over 2^31 - 1 on CUDA devices (cuBLAS counts in "
          "int); compute it on CPU devices (SPMD_PLATFORMS=cpu)");
    }
    return dispatch_complex(a.dtype, [&]<class H>(std::type_identity<H>) {
      blas_matmul<::cuda::std::complex<typename H::value_type>>(stream_, blas_, a, b, c);
    });
  }
  dispatch(a.dtype, [&]<class T>(std::type_identity<T>) {
    if constexpr (kIsFloat<ComputeOf<T>>) {
      if (fits_blas) return blas_matmul<T>(stream_, blas_, a, b, c);
    }
    const int64_t total = batch * m * n;
    if (total == 0) return;
    loop_matmul_kernel<T><<<static_cast<unsigned>(blocks_for(total)), kThreads, 0, stream_>>>(
        batch, m, n, k, static_cast<const StorageOf<T>*>(a.data),
        Strides3{a.strides[0], a.strides[1], a.strides[2]},
        static_cast<const StorageOf<T>*>(b.data),
        Strides3{b.strides[0], b.strides[1], b.strides[2]}, static_cast<StorageOf<T>*>(c.data));
    check(cudaGetLastError(), "launching the matmul kernel");
  });
}

}  // namespace spmd::internal::cuda
