// SPDX-License-Identifier: Apache-2.0
// Internal: collectives among the worker threads of one CPU call, through shared memory.
//
// Zero-copy: every member publishes pointers to its input and output, meets the others at one
// barrier, then reads the other members' inputs directly (they are kept alive by `keep` until the
// slot is reused two collectives later, which implies every member has finished reading, or until
// the call ends).
//   - small all-reduce: leader-computes, the last member to arrive reduces once and writes every
//     output before it releases the others (one synchronisation, N times less reading than
//     "everyone reduces everything");
//   - large all-reduce: owner-computes, member r reduces chunk r in cache-sized blocks and writes
//     it to every output, then a second barrier (XLA's in-process scheme);
//   - shared all-reduce (all_reduce_shared): the same two schemes, but writing only rank 0's
//     output, which is lent to every member (arrays are immutable);
//   - shared all-gather (all_gather_shared): rank 0's output is lent to every member; the last
//     member to arrive fills it when small, else each member copies its own rows into it, then a
//     second barrier (one copy of the result instead of one per member);
//   - shared permute (permute_shared): the source's input itself is lent, nothing is copied;
//   - reduce_scatter, all_gather, all_to_all, permute: each member pulls what it needs.
// Reductions visit inputs in rank order, so every algorithm and schedule gives identical bits.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "exec/futex.h"

namespace spmd::internal {

// The state the members of one communicator share (made once, through the Rendezvous). Methods
// take the caller's rank; CpuCommunicator is one rank's handle on it.
class CpuExchange {
 public:
  explicit CpuExchange(int size);

  void all_reduce(int rank, ReduceKind op, DType dtype, int64_t count, const void* in, void* out,
                  const Communicator::Keep& keep, Cancel& cancel);
  // The result in rank 0's `out` only, lent to the other members.
  Communicator::Lent all_reduce_shared(int rank, ReduceKind op, DType dtype, int64_t count,
                                       const void* in, void* out,
                                       const Communicator::Keep& out_keep,
                                       const Communicator::Keep& keep, Cancel& cancel);
  void reduce_scatter(int rank, ReduceKind op, DType dtype, int64_t outer, int64_t inner,
                      const void* in, void* out, const Communicator::Keep& keep, Cancel& cancel);
  void all_gather(int rank, int64_t outer, int64_t row_bytes, const void* in, void* out,
                  const Communicator::Keep& keep, Cancel& cancel);
  // The result in rank 0's `out` only, lent to the other members.
  Communicator::Lent all_gather_shared(int rank, int64_t outer, int64_t row_bytes, const void* in,
                                       void* out, const Communicator::Keep& out_keep,
                                       const Communicator::Keep& keep, Cancel& cancel);
  void all_to_all(int rank, int64_t chunk_bytes, const void* in, void* out,
                  const Communicator::Keep& keep, Cancel& cancel);
  void permute(int rank, int src, int64_t bytes, const void* in, void* out,
               const Communicator::Keep& keep, Cancel& cancel);
  // The source's input lent (zeros in `out` when src < 0).
  Communicator::Lent permute_shared(int rank, int src, int64_t bytes, const void* in, void* out,
                                    const Communicator::Keep& keep, Cancel& cancel);
  void barrier(int rank, Cancel& cancel);
  void abort();
  // Between calls: drops kept inputs; false when aborted or the members are out of step.
  bool release();

 private:
  // Bit 0 of the gate word: set on abort. Generations count in 2s.
  static constexpr uint32_t kAbortBit = 1;
  struct alignas(64) Slot {
    const void* in = nullptr;
    void* out = nullptr;
    Communicator::Keep keep;
    Communicator::Keep out_keep;  // all_reduce_shared: what keeps `out` alive
  };
  struct alignas(64) Counter {
    uint32_t ops = 0;  // collectives this member has run; its parity picks the slot set
  };
  // Publishes this member's buffers in the next slot set and waits for every member. Returns the
  // slot set every member published in. The last member to arrive runs `leader_work` on the slots
  // before it releases the others.
  const std::vector<Slot>& exchange(
      int rank, const void* in, void* out, const Communicator::Keep& keep, Cancel& cancel,
      const std::function<void(const std::vector<Slot>&)>& leader_work = nullptr,
      const Communicator::Keep& out_keep = nullptr);
  // all_reduce into every member's `out`, or into rank 0's only (`shared`); returns the slot set.
  const std::vector<Slot>& reduce_all(int rank, ReduceKind op, DType dtype, int64_t count,
                                      const void* in, void* out, const Communicator::Keep& keep,
                                      const Communicator::Keep& out_keep, bool shared,
                                      Cancel& cancel);
  // Waits until every member has called arrive() as many times as this one; the last to arrive
  // runs `leader_work` first.
  void arrive(Cancel& cancel, const std::function<void()>& leader_work = nullptr);
  // Waits while the gate word is `gen` (spinning or yielding first, per the call's thread count),
  // until cancel's deadline; throws through `cancel` on abort or timeout.
  void wait_gate(uint32_t gen, Cancel& cancel);

  const int size_;
  alignas(64) WaitWord gate_;  // generation * 2 | kAbortBit
  alignas(64) std::atomic<int> arrived_{0};
  std::vector<Slot> slots_[2];
  std::vector<Counter> counters_;
};

// One rank's handle on a CpuExchange.
class CpuCommunicator final : public Communicator {
 public:
  CpuCommunicator(std::shared_ptr<CpuExchange> exchange, int rank)
      : exchange_(std::move(exchange)), rank_(rank) {}

  void all_reduce(ReduceKind op, DType dtype, int64_t count, const void* in, void* out,
                  const Keep& keep, Cancel& cancel) override {
    exchange_->all_reduce(rank_, op, dtype, count, in, out, keep, cancel);
  }
  // Rank 0's `out` holds a shared result, lent to the others.
  bool lends_shared_results() const override { return rank_ != 0; }
  Lent all_reduce_shared(ReduceKind op, DType dtype, int64_t count, const void* in, void* out,
                         const Keep& out_keep, const Keep& keep, Cancel& cancel) override {
    return exchange_->all_reduce_shared(rank_, op, dtype, count, in, out, out_keep, keep, cancel);
  }
  void reduce_scatter(ReduceKind op, DType dtype, int64_t outer, int64_t inner, const void* in,
                      void* out, const Keep& keep, Cancel& cancel) override {
    exchange_->reduce_scatter(rank_, op, dtype, outer, inner, in, out, keep, cancel);
  }
  void all_gather(int64_t outer, int64_t row_bytes, const void* in, void* out, const Keep& keep,
                  Cancel& cancel) override {
    exchange_->all_gather(rank_, outer, row_bytes, in, out, keep, cancel);
  }
  Lent all_gather_shared(int64_t outer, int64_t row_bytes, const void* in, void* out,
                         const Keep& out_keep, const Keep& keep, Cancel& cancel) override {
    return exchange_->all_gather_shared(rank_, outer, row_bytes, in, out, out_keep, keep, cancel);
  }
  void all_to_all(int64_t chunk_bytes, const void* in, void* out, const Keep& keep,
                  Cancel& cancel) override {
    exchange_->all_to_all(rank_, chunk_bytes, in, out, keep, cancel);
  }
  void permute(int src, int64_t bytes, const void* in, void* out, const Keep& keep,
               Cancel& cancel) override {
    exchange_->permute(rank_, src, bytes, in, out, keep, cancel);
  }
  bool lends_inputs() const override { return true; }
  Lent permute_shared(int src, int64_t bytes, const void* in, void* out, const Keep& keep,
                      Cancel& cancel) override {
    return exchange_->permute_shared(rank_, src, bytes, in, out, keep, cancel);
  }
  void barrier(Cancel& cancel) override { exchange_->barrier(rank_, cancel); }
  void abort() override { exchange_->abort(); }
  bool release() override { return exchange_->release(); }

 private:
  std::shared_ptr<CpuExchange> exchange_;
  int rank_;
};

// out[i - begin] = in_0[i] op in_1[i] op ... for i in [begin, end), inputs in the given order
// (`out` points at the destination of element `begin`, and overlaps no input: it may hold partial
// results before it is complete).
void reduce_inputs(ReduceKind op, DType dtype, const void* const* ins, int n, void* out,
                   int64_t begin, int64_t end);

}  // namespace spmd::internal
