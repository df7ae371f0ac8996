// SPDX-License-Identifier: Apache-2.0
// Shared-memory collectives among CPU device threads (cpu_communicator.h).
#include "cpu/cpu_communicator.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <type_traits>

#include "backend/element_rules.h"
#include "backend/host_fold.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace spmd::internal {
namespace {

// All-reduces of at most this many bytes are computed by the last member to arrive, for all
// members, before it releases them (one synchronisation, minimal traffic). Somewhat more when
// threads outnumber cores (the members cannot run in parallel anyway), but not much: while one
// thread does all the work the others run out of yields and sleep, and their wake-up soon costs
// more than the second synchronisation of owner-computes. Measured with 2, 4 and 8 devices on 2
// cores (docs/benchmarks.md): leader-computes wins at 8 KiB, owner-computes from 16 KiB (at 32
// KiB 2.6 / 6.7 / 15 us against 4.0 / 9.0 / 23 us).
constexpr int64_t kLeaderMaxBytes = 4096;
constexpr int64_t kLeaderMaxBytesOversubscribed = 8192;
// Block size of owner-computes: a block stays in L1/L2 while it is written to every output.
constexpr int64_t kBlockBytes = 16 * 1024;
// All-reduces of at least this many bytes per device write other devices' outputs with
// non-temporal stores (the outputs would not stay in cache anyway).
constexpr int64_t kStreamMinBytes = 4 << 20;

// Reduces block by block so the accumulator stays in L1; each element sees inputs in rank order.
// Where an element is computed in its stored type (all but the half types) the output block
// itself is the accumulator: no copy out of a staging buffer (for f32, 14% of the time of an
// 8-device psum that fits in cache).
template <class T, class Rule>
void reduce_typed(const void* const* ins, int n, void* out, int64_t begin, int64_t end) {
  constexpr int64_t kBlock = 1024;
  constexpr bool kInPlace = std::is_same_v<ComputeOf<T>, StorageOf<T>>;
  ComputeOf<T> staging[kInPlace ? 1 : kBlock];
  const auto* const* in = reinterpret_cast<const StorageOf<T>* const*>(ins);
  for (int64_t b = begin; b < end; b += kBlock) {
    int64_t len = std::min(kBlock, end - b);
    StorageOf<T>* dst = static_cast<StorageOf<T>*>(out) + (b - begin);
    if constexpr (kInPlace) {
      fold_inputs<T, Rule>(dst, in, n, b, len, true);
    } else {
      fold_inputs<T, Rule>(staging, in, n, b, len, true);
      for (int64_t i = 0; i < len; ++i) store<T>(&dst[i], staging[i]);
    }
  }
}

template <class Rule>
void reduce_rule(DType dtype, const void* const* ins, int n, void* out, int64_t begin,
                 int64_t end) {
  dispatch(dtype,
           [&]<class T>(std::type_identity<T>) { reduce_typed<T, Rule>(ins, n, out, begin, end); });
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
      return reduce_rule<SumRule>(dtype, ins, n, out, begin, end);
    case ReduceKind::kMax:
      return reduce_rule<MaxRule>(dtype, ins, n, out, begin, end);
    case ReduceKind::kMin:
      return reduce_rule<MinRule>(dtype, ins, n, out, begin, end);
  }
}

CpuExchange::CpuExchange(int size) : size_(size), counters_(size) {
  slots_[0].resize(size);
  slots_[1].resize(size);
}

void CpuExchange::wait_gate(uint32_t gen, Cancel& cancel) {
  uint32_t v = gen;
  auto changed = [&] { return (v = gate_.word.load(std::memory_order_acquire)) != gen; };
  if (!spin_then_yield(wait_policy(cancel.threads()), changed)) {
    Cancel::Clock::time_point deadline = cancel.deadline();
    while ((v = gate_.word.load(std::memory_order_acquire)) == gen) {
      auto left = deadline - Cancel::Clock::now();
      if (left.count() <= 0) {
        cancel.deadline_passed();  // throws, or moves the deadline
        deadline = cancel.deadline();
        continue;
      }
      gate_.sleep(gen, left);
    }
  }
  if (v & kAbortBit) cancel.throw_aborted();
}

void CpuExchange::arrive(Cancel& cancel, const std::function<void()>& leader_work) {
  uint32_t gen = gate_.word.load(std::memory_order_acquire);
  if (gen & kAbortBit) cancel.throw_aborted();
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == size_) {
    if (leader_work) leader_work();
    arrived_.store(0, std::memory_order_relaxed);
    gate_.word.fetch_add(2, std::memory_order_seq_cst);
    gate_.wake();
  } else {
    wait_gate(gen, cancel);
  }
}

const std::vector<CpuExchange::Slot>& CpuExchange::exchange(
    int rank, const void* in, void* out, const Communicator::Keep& keep, Cancel& cancel,
    const std::function<void(const std::vector<Slot>&)>& leader_work,
    const Communicator::Keep& out_keep) {
  std::vector<Slot>& set = slots_[counters_[rank].ops++ & 1];
  set[rank].in = in;
  set[rank].out = out;
  set[rank].keep = keep;
  set[rank].out_keep = out_keep;
  if (leader_work) {
    arrive(cancel, [&] { leader_work(set); });
  } else {
    arrive(cancel);
  }
  return set;
}

void CpuExchange::all_reduce(int rank, ReduceKind op, DType dtype, int64_t count, const void* in,
                             void* out, const Communicator::Keep& keep, Cancel& cancel) {
  reduce_all(rank, op, dtype, count, in, out, keep, nullptr, false, cancel);
}

Communicator::Lent CpuExchange::all_reduce_shared(int rank, ReduceKind op, DType dtype,
                                                  int64_t count, const void* in, void* out,
                                                  const Communicator::Keep& out_keep,
                                                  const Communicator::Keep& keep, Cancel& cancel) {
  const std::vector<Slot>& set =
      reduce_all(rank, op, dtype, count, in, out, keep, out_keep, true, cancel);
  // Rank 0 cannot reuse this slot set (two collectives on) before this member has run its next
  // exchange, so its slot is still there.
  if (rank == 0) return {};
  return {set[0].out_keep, set[0].out};
}

const std::vector<CpuExchange::Slot>& CpuExchange::reduce_all(int rank, ReduceKind op, DType dtype,
                                                              int64_t count, const void* in,
                                                              void* out,
                                                              const Communicator::Keep& keep,
                                                              const Communicator::Keep& out_keep,
                                                              bool shared, Cancel& cancel) {
  const int64_t item = itemsize(dtype);
  // The outputs written: every member's, or rank 0's only.
  const int outputs = shared ? 1 : size_;
  const bool oversubscribed = wait_policy(cancel.threads()).yields > 0;
  if (count * item <= (oversubscribed ? kLeaderMaxBytesOversubscribed : kLeaderMaxBytes)) {
    // The last member to arrive reduces once and fills every output before it releases the
    // others: one synchronisation, and the least work and cache traffic of any scheme. (The work
    // captures two pointers, so that its std::function needs no heap allocation.)
    const struct {
      ReduceKind op;
      DType dtype;
      int64_t count;
      int outputs;
    } job{op, dtype, count, outputs};
    return exchange(
        rank, in, out, keep, cancel,
        [this, &job](const std::vector<Slot>& slots) {
          Inputs ins(size_);
          for (int q = 0; q < size_; ++q) ins[q] = slots[q].in;
          reduce_inputs(job.op, job.dtype, ins.data(), size_, slots[0].out, 0, job.count);
          const int64_t bytes = job.count * itemsize(job.dtype);
          for (int q = 1; q < job.outputs; ++q) std::memcpy(slots[q].out, slots[0].out, bytes);
        },
        out_keep);
  }
  const std::vector<Slot>& set = exchange(rank, in, out, keep, cancel, nullptr, out_keep);
  Inputs ins(size_);
  for (int q = 0; q < size_; ++q) ins[q] = set[q].in;
  // Owner-computes: chunks are multiples of 64 bytes so that no two owners share a cache line.
  const int64_t align = std::max<int64_t>(1, 64 / item);
  const int64_t chunk = ((count + size_ - 1) / size_ + align - 1) / align * align;
  const int64_t block = std::max<int64_t>(align, kBlockBytes / item);
  const int64_t begin = std::min(count, rank * chunk);
  const int64_t end = std::min(count, begin + chunk);
  // Large outputs are written with streaming stores from a small reduced block, own output
  // included, so that they do not evict the inputs (which then stay in the last-level cache).
  const bool stream = outputs > 1 && count * item >= kStreamMinBytes;
  thread_local std::vector<char> staging;
  if (stream && static_cast<int64_t>(staging.size()) < block * item + 64) {
    staging.resize(block * item + 64);
  }
  char* reduced_base =
      reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(staging.data()) + 63) / 64 * 64);
  // Without streaming, the block is reduced straight into the first output written.
  const int first = shared ? 0 : rank;
  for (int64_t b = begin; b < end; b += block) {
    int64_t e = std::min(end, b + block);
    char* reduced = stream ? reduced_base : static_cast<char*>(set[first].out) + b * item;
    reduce_inputs(op, dtype, ins.data(), size_, reduced, b, e);
    for (int j = stream ? 0 : 1; j < outputs; ++j) {  // after self, so owners spread their writes
      int q = (first + j) % size_;
      store_block(static_cast<char*>(set[q].out) + b * item, reduced, (e - b) * item, stream);
    }
  }
  store_fence(stream);
  arrive(cancel);  // every output is complete only when every owner is done
  return set;
}

void CpuExchange::reduce_scatter(int rank, ReduceKind op, DType dtype, int64_t outer, int64_t inner,
                                 const void* in, void* out, const Communicator::Keep& keep,
                                 Cancel& cancel) {
  const std::vector<Slot>& set = exchange(rank, in, out, keep, cancel);
  const int64_t item = itemsize(dtype);
  Inputs ins(size_);
  for (int64_t o = 0; o < outer; ++o) {
    int64_t offset = (o * size_ + rank) * inner * item;
    for (int q = 0; q < size_; ++q) ins[q] = static_cast<const char*>(set[q].in) + offset;
    reduce_inputs(op, dtype, ins.data(), size_, static_cast<char*>(out) + o * inner * item, 0,
                  inner);
  }
}

void CpuExchange::all_gather(int rank, int64_t outer, int64_t row_bytes, const void* in, void* out,
                             const Communicator::Keep& keep, Cancel& cancel) {
  const std::vector<Slot>& set = exchange(rank, in, out, keep, cancel);
  char* dst = static_cast<char*>(out);
  for (int64_t o = 0; o < outer; ++o) {
    for (int q = 0; q < size_; ++q) {
      std::memcpy(dst + (o * size_ + q) * row_bytes,
                  static_cast<const char*>(set[q].in) + o * row_bytes, row_bytes);
    }
  }
}

Communicator::Lent CpuExchange::all_gather_shared(int rank, int64_t outer, int64_t row_bytes,
                                                  const void* in, void* out,
                                                  const Communicator::Keep& out_keep,
                                                  const Communicator::Keep& keep, Cancel& cancel) {
  // out[o][q] = in_q[o] for the members' rows `from` (one member's, or all of them).
  auto gather = [this, outer, row_bytes](const std::vector<Slot>& slots, int from, int to) {
    if (row_bytes == 0) return;  // (an empty array's memory is not to be touched)
    char* dst = static_cast<char*>(slots[0].out);
    for (int64_t o = 0; o < outer; ++o) {
      for (int q = from; q < to; ++q) {
        std::memcpy(dst + (o * size_ + q) * row_bytes,
                    static_cast<const char*>(slots[q].in) + o * row_bytes, row_bytes);
      }
    }
  };
  const int64_t bytes = outer * size_ * row_bytes;
  const bool oversubscribed = wait_policy(cancel.threads()).yields > 0;
  const std::vector<Slot>* set = nullptr;
  if (bytes <= (oversubscribed ? kLeaderMaxBytesOversubscribed : kLeaderMaxBytes)) {
    // As for small all-reduces: one synchronisation, the last member to arrive copying everything.
    set = &exchange(
        rank, in, out, keep, cancel,
        [&gather, this](const std::vector<Slot>& slots) { gather(slots, 0, size_); }, out_keep);
  } else {
    // Each member's rows are still in its cache: it writes them, then waits for the others'.
    set = &exchange(rank, in, out, keep, cancel, nullptr, out_keep);
    gather(*set, rank, rank + 1);
    arrive(cancel);
  }
  // As in all_reduce_shared, rank 0's slot stays until this member's next exchange.
  if (rank == 0 || bytes == 0) return {};
  return {(*set)[0].out_keep, (*set)[0].out};
}

void CpuExchange::all_to_all(int rank, int64_t chunk_bytes, const void* in, void* out,
                             const Communicator::Keep& keep, Cancel& cancel) {
  const std::vector<Slot>& set = exchange(rank, in, out, keep, cancel);
  for (int q = 0; q < size_; ++q) {
    std::memcpy(static_cast<char*>(out) + q * chunk_bytes,
                static_cast<const char*>(set[q].in) + rank * chunk_bytes, chunk_bytes);
  }
}

void CpuExchange::permute(int rank, int src, int64_t bytes, const void* in, void* out,
                          const Communicator::Keep& keep, Cancel& cancel) {
  const std::vector<Slot>& set = exchange(rank, in, out, keep, cancel);
  if (src < 0) {
    std::memset(out, 0, bytes);
  } else {
    std::memcpy(out, set[src].in, bytes);
  }
}

Communicator::Lent CpuExchange::permute_shared(int rank, int src, int64_t bytes, const void* in,
                                               void* out, const Communicator::Keep& keep,
                                               Cancel& cancel) {
  const std::vector<Slot>& set = exchange(rank, in, out, keep, cancel);
  if (src < 0) {
    if (bytes > 0) std::memset(out, 0, bytes);  // (an empty array may have no memory)
    return {};
  }
  return {set[src].keep, set[src].in};
}

void CpuExchange::barrier(int rank, Cancel& cancel) {
  exchange(rank, nullptr, nullptr, nullptr, cancel);
}

void CpuExchange::abort() {
  gate_.word.fetch_or(kAbortBit, std::memory_order_seq_cst);
  futex_wake_all(gate_.word);
}

bool CpuExchange::release() {
  if (gate_.word.load(std::memory_order_acquire) & kAbortBit) return false;
  if (arrived_.load(std::memory_order_acquire) != 0) return false;
  for (const Counter& c : counters_) {
    if (c.ops != counters_[0].ops) return false;
  }
  for (std::vector<Slot>& set : slots_) {
    for (Slot& slot : set) slot = Slot{};
  }
  return true;
}

}  // namespace spmd::internal
