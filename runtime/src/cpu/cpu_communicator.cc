// Shared-memory collectives among CPU device threads (cpu_communicator.h).
#include "cpu/cpu_communicator.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace spmd::internal {
namespace {

// Integer sums wrap like XLA's, so they accumulate in the unsigned type of the same width.
template <class T>
using WrapSum = std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>,
                                   std::make_unsigned_t<T>, T>;

template <class T, class Acc>
struct Codec {
  static Acc load(T v) { return static_cast<Acc>(v); }
  static T store(Acc v) { return static_cast<T>(v); }
};
// float16 and bfloat16 accumulate in float and round once.
struct Half {
  static float load(uint16_t v) { return static_cast<float>(float16_t::from_bits(v)); }
  static uint16_t store(float v) { return float16_t(v).bits; }
};
struct BHalf {
  static float load(uint16_t v) { return static_cast<float>(bfloat16_t::from_bits(v)); }
  static uint16_t store(float v) { return bfloat16_t(v).bits; }
};

struct Sum {
  template <class A>
  static A apply(A a, A b) {
    if constexpr (std::is_same_v<A, bool>)
      return a || b;
    else
      return static_cast<A>(a + b);
  }
};
// NaN-propagating, like jnp.maximum/minimum.
struct Max {
  template <class A>
  static A apply(A a, A b) {
    return (a > b || a != a) ? a : b;
  }
};
struct Min {
  template <class A>
  static A apply(A a, A b) {
    return (a < b || a != a) ? a : b;
  }
};

// acc[i] = op(...op(op(acc[i], in[0][i]), in[1][i])..., in[K-1][i]): K inputs folded in order
// while acc[i] sits in a register, so the loop vectorizes and touches the accumulator once per K
// inputs instead of once per input.
template <int K, class T, class Acc, class C, class Op>
void fold(Acc* acc, const T* const* in, int64_t offset, int64_t len) {
  for (int64_t i = 0; i < len; ++i) {
    Acc a = acc[i];
    for (int q = 0; q < K; ++q) a = Op::apply(a, C::load(in[q][offset + i]));
    acc[i] = a;
  }
}

template <class T, class Acc, class C, class Op>
void fold_some(int k, Acc* acc, const T* const* in, int64_t offset, int64_t len) {
  switch (k) {
    case 1:
      return fold<1, T, Acc, C, Op>(acc, in, offset, len);
    case 2:
      return fold<2, T, Acc, C, Op>(acc, in, offset, len);
    case 3:
      return fold<3, T, Acc, C, Op>(acc, in, offset, len);
    default:
      return fold<4, T, Acc, C, Op>(acc, in, offset, len);
  }
}

// Reduces block by block so the accumulator stays in L1; each element sees inputs in rank order.
template <class T, class Acc, class C, class Op>
void reduce_typed(const void* const* ins, int n, void* out, int64_t begin, int64_t end) {
  constexpr int64_t kBlock = 1024;
  Acc acc[kBlock];
  const T* const* in = reinterpret_cast<const T* const*>(ins);
  for (int64_t b = begin; b < end; b += kBlock) {
    int64_t len = std::min(kBlock, end - b);
    for (int64_t i = 0; i < len; ++i) acc[i] = C::load(in[0][b + i]);
    for (int q = 1; q < n; q += 4) {
      fold_some<T, Acc, C, Op>(std::min(4, n - q), acc, in + q, b, len);
    }
    T* dst = static_cast<T*>(out) + (b - begin);
    for (int64_t i = 0; i < len; ++i) dst[i] = C::store(acc[i]);
  }
}

template <class Op>
void reduce_op(DType dtype, const void* const* ins, int n, void* out, int64_t begin, int64_t end) {
  constexpr bool kSum = std::is_same_v<Op, Sum>;
  switch (dtype) {
    case DType::kBool:
      return reduce_typed<bool, bool, Codec<bool, bool>, Op>(ins, n, out, begin, end);
    case DType::kInt32: {
      using A = std::conditional_t<kSum, WrapSum<int32_t>, int32_t>;
      return reduce_typed<int32_t, A, Codec<int32_t, A>, Op>(ins, n, out, begin, end);
    }
    case DType::kInt64: {
      using A = std::conditional_t<kSum, WrapSum<int64_t>, int64_t>;
      return reduce_typed<int64_t, A, Codec<int64_t, A>, Op>(ins, n, out, begin, end);
    }
    case DType::kUInt32:
      return reduce_typed<uint32_t, uint32_t, Codec<uint32_t, uint32_t>, Op>(ins, n, out, begin,
                                                                             end);
    case DType::kFloat16:
      return reduce_typed<uint16_t, float, Half, Op>(ins, n, out, begin, end);
    case DType::kBFloat16:
      return reduce_typed<uint16_t, float, BHalf, Op>(ins, n, out, begin, end);
    case DType::kFloat32:
      return reduce_typed<float, float, Codec<float, float>, Op>(ins, n, out, begin, end);
    case DType::kFloat64:
      return reduce_typed<double, double, Codec<double, double>, Op>(ins, n, out, begin, end);
  }
}

// Copies `bytes` from src to dst, with non-temporal stores when `stream` is set: for outputs larger
// than the caches a normal store first reads each destination line (read-for-ownership), which
// costs as much memory traffic as the copy itself. The caller fences before publishing.
void store_block(void* dst, const void* src, size_t bytes, bool stream) {
#if defined(__SSE2__)
  if (stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0 && bytes % 16 == 0) {
    auto* d = static_cast<__m128i*>(dst);
    const auto* s = static_cast<const __m128i*>(src);
    for (size_t i = 0; i < bytes / 16; ++i) _mm_stream_si128(d + i, _mm_loadu_si128(s + i));
    return;
  }
#endif
  std::memcpy(dst, src, bytes);
}

void store_fence(bool stream) {
#if defined(__SSE2__)
  if (stream) _mm_sfence();
#endif
}

// The input pointers of one reduction, on the stack for groups of up to 64 devices.
class Inputs {
 public:
  explicit Inputs(int n) {
    if (n > static_cast<int>(inline_.size())) heap_.resize(n);
  }
  const void*& operator[](int q) { return heap_.empty() ? inline_[q] : heap_[q]; }
  const void* const* data() const { return heap_.empty() ? inline_.data() : heap_.data(); }

 private:
  std::array<const void*, 64> inline_;
  std::vector<const void*> heap_;
};

}  // namespace

void reduce_inputs(ReduceKind op, DType dtype, const void* const* ins, int n, void* out,
                   int64_t begin, int64_t end) {
  switch (op) {
    case ReduceKind::kSum:
      return reduce_op<Sum>(dtype, ins, n, out, begin, end);
    case ReduceKind::kMax:
      return reduce_op<Max>(dtype, ins, n, out, begin, end);
    case ReduceKind::kMin:
      return reduce_op<Min>(dtype, ins, n, out, begin, end);
  }
}

CpuCommunicator::CpuCommunicator(int size, SyncContext& sync, CpuCommunicatorOptions options)
    : size_(size), sync_(sync), options_(options), counters_(size) {
  slots_[0].resize(size);
  slots_[1].resize(size);
}

void CpuCommunicator::arrive(const std::function<void()>& leader_work) {
  uint32_t gen = gate_.word.load(std::memory_order_acquire);
  if (gen & SyncContext::kAbortBit) sync_.throw_aborted();
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == size_) {
    if (leader_work) leader_work();
    arrived_.store(0, std::memory_order_relaxed);
    gate_.word.fetch_add(2, std::memory_order_seq_cst);
    gate_.wake();
  } else {
    sync_.wait_while_equal(gate_, gen);
  }
}

const std::vector<CpuCommunicator::Slot>& CpuCommunicator::exchange(
    int rank, const void* in, void* out, Keep keep,
    const std::function<void(const std::vector<Slot>&)>& leader_work) {
  std::vector<Slot>& set = slots_[counters_[rank].ops++ & 1];
  set[rank].in = in;
  set[rank].out = out;
  set[rank].keep = std::move(keep);
  if (leader_work) {
    arrive([&] { leader_work(set); });
  } else {
    arrive();
  }
  return set;
}

void CpuCommunicator::all_reduce(int rank, ReduceKind op, DType dtype, int64_t count,
                                 const void* in, void* out, Keep keep) {
  const int64_t item = itemsize(dtype);
  const bool oversubscribed = sync_.policy().yields > 0;
  if (count * item <=
      (oversubscribed ? options_.leader_max_bytes_oversubscribed : options_.leader_max_bytes)) {
    // The last member to arrive reduces once and fills every output before it releases the
    // others: one synchronisation, and the least work and cache traffic of any scheme.
    exchange(rank, in, out, std::move(keep), [&](const std::vector<Slot>& slots) {
      Inputs ins(size_);
      for (int q = 0; q < size_; ++q) ins[q] = slots[q].in;
      reduce_inputs(op, dtype, ins.data(), size_, slots[0].out, 0, count);
      for (int q = 1; q < size_; ++q) std::memcpy(slots[q].out, slots[0].out, count * item);
    });
    return;
  }
  const std::vector<Slot>& set = exchange(rank, in, out, std::move(keep));
  Inputs ins(size_);
  for (int q = 0; q < size_; ++q) ins[q] = set[q].in;
  // Owner-computes: chunks are multiples of 64 bytes so that no two owners share a cache line.
  const int64_t align = std::max<int64_t>(1, 64 / item);
  const int64_t chunk = ((count + size_ - 1) / size_ + align - 1) / align * align;
  const int64_t block = std::max<int64_t>(align, options_.block_bytes / item);
  const int64_t begin = std::min(count, rank * chunk);
  const int64_t end = std::min(count, begin + chunk);
  // Large outputs are written with streaming stores from a small reduced block, own output
  // included, so that they do not evict the inputs (which then stay in the last-level cache).
  const bool stream = count * item >= options_.stream_min_bytes;
  thread_local std::vector<char> staging;
  if (stream && static_cast<int64_t>(staging.size()) < block * item + 64) {
    staging.resize(block * item + 64);
  }
  char* reduced_base = reinterpret_cast<char*>(
      (reinterpret_cast<uintptr_t>(staging.data()) + 63) / 64 * 64);
  for (int64_t b = begin; b < end; b += block) {
    int64_t e = std::min(end, b + block);
    char* reduced = stream ? reduced_base : static_cast<char*>(out) + b * item;
    reduce_inputs(op, dtype, ins.data(), size_, reduced, b, e);
    for (int j = stream ? 0 : 1; j < size_; ++j) {  // after self, so owners spread their writes
      int q = (rank + j) % size_;
      store_block(static_cast<char*>(set[q].out) + b * item, reduced, (e - b) * item, stream);
    }
  }
  store_fence(stream);
  arrive();  // every output is complete only when every owner is done
}

void CpuCommunicator::reduce_scatter(int rank, ReduceKind op, DType dtype, int64_t outer,
                                     int64_t inner, const void* in, void* out, Keep keep) {
  const std::vector<Slot>& set = exchange(rank, in, out, std::move(keep));
  const int64_t item = itemsize(dtype);
  Inputs ins(size_);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t offset = (o * size_ + rank) * inner * item;
    for (int q = 0; q < size_; ++q) ins[q] = static_cast<const char*>(set[q].in) + offset;
    reduce_inputs(op, dtype, ins.data(), size_, static_cast<char*>(out) + o * inner * item, 0,
                  inner);
  }
}

void CpuCommunicator::all_gather(int rank, int64_t outer, int64_t row_bytes, const void* in,
                                 void* out, Keep keep) {
  const std::vector<Slot>& set = exchange(rank, in, out, std::move(keep));
  char* dst = static_cast<char*>(out);
  for (int64_t o = 0; o < outer; ++o) {
    for (int q = 0; q < size_; ++q) {
      std::memcpy(dst + (o * size_ + q) * row_bytes,
                  static_cast<const char*>(set[q].in) + o * row_bytes, row_bytes);
    }
  }
}

void CpuCommunicator::all_to_all(int rank, int64_t chunk_bytes, const void* in, void* out,
                                 Keep keep) {
  const std::vector<Slot>& set = exchange(rank, in, out, std::move(keep));
  for (int q = 0; q < size_; ++q) {
    std::memcpy(static_cast<char*>(out) + q * chunk_bytes,
                static_cast<const char*>(set[q].in) + rank * chunk_bytes, chunk_bytes);
  }
}

void CpuCommunicator::permute(int rank, int src, int64_t bytes, const void* in, void* out,
                              Keep keep) {
  const std::vector<Slot>& set = exchange(rank, in, out, std::move(keep));
  if (src < 0) {
    std::memset(out, 0, bytes);
  } else {
    std::memcpy(out, set[src].in, bytes);
  }
}

void CpuCommunicator::barrier(int rank) { exchange(rank, nullptr, nullptr, nullptr); }

void CpuCommunicator::wake_for_abort() {
  gate_.word.fetch_or(SyncContext::kAbortBit, std::memory_order_seq_cst);
  futex_wake_all(gate_.word);
}

}  // namespace spmd::internal
