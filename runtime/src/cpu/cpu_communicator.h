// Internal: collectives among the worker threads of one CPU call, through shared memory.
//
// Zero-copy: every member publishes pointers to its input and output, meets the others at one
// barrier, then reads the other members' inputs directly (they are kept alive by `keep` until the
// slot is reused two collectives later, which implies every member has finished reading).
//   - small all-reduce: leader-computes, the last member to arrive reduces once and writes every
//     output before it releases the others (one synchronisation, N times less reading than
//     "everyone reduces everything");
//   - large all-reduce: owner-computes, member r reduces chunk r in cache-sized blocks and writes
//     it to every output, then a second barrier (XLA's in-process scheme);
//   - reduce_scatter, all_gather, all_to_all, permute: each member pulls what it needs.
// Reductions visit inputs in rank order, so every algorithm and schedule gives identical bits.
#pragma once

#include <atomic>
#include <functional>
#include <vector>

#include "backend/backend.h"
#include "exec/sync_context.h"

namespace spmd::internal {

struct CpuCommunicatorOptions {
  // All-reduces of at most this many bytes are computed by the last member to arrive, for all
  // members, before it releases them (one synchronisation, minimal traffic). Larger when threads
  // outnumber cores: the members cannot run in parallel anyway, so one thread doing all the work
  // beats N threads each reading N inputs.
  int64_t leader_max_bytes = 4096;
  int64_t leader_max_bytes_oversubscribed = 64 * 1024;
  // Block size of owner-computes: a block stays in L1/L2 while it is written to every output.
  int64_t block_bytes = 16 * 1024;
  // All-reduces of at least this many bytes per device write other devices' outputs with
  // non-temporal stores (the outputs would not stay in cache anyway).
  int64_t stream_min_bytes = 4 << 20;
};

class CpuCommunicator final : public Communicator {
 public:
  CpuCommunicator(int size, SyncContext& sync, CpuCommunicatorOptions options = {});

  void all_reduce(int rank, ReduceKind op, DType dtype, int64_t count, const void* in, void* out,
                  Keep keep) override;
  void reduce_scatter(int rank, ReduceKind op, DType dtype, int64_t outer, int64_t inner,
                      const void* in, void* out, Keep keep) override;
  void all_gather(int rank, int64_t outer, int64_t row_bytes, const void* in, void* out,
                  Keep keep) override;
  void all_to_all(int rank, int64_t chunk_bytes, const void* in, void* out, Keep keep) override;
  void permute(int rank, int src, int64_t bytes, const void* in, void* out, Keep keep) override;
  void barrier(int rank) override;
  void wake_for_abort() override;

 private:
  struct alignas(64) Slot {
    const void* in = nullptr;
    void* out = nullptr;
    Keep keep;
  };
  struct alignas(64) Counter {
    uint32_t ops = 0;  // collectives this member has run; its parity picks the slot set
  };
  // Publishes this member's buffers in the next slot set and waits for every member. Returns the
  // slot set every member published in. The last member to arrive runs `leader_work` on the slots
  // before it releases the others.
  const std::vector<Slot>& exchange(
      int rank, const void* in, void* out, Keep keep,
      const std::function<void(const std::vector<Slot>&)>& leader_work = nullptr);
  // Waits until every member has called arrive() as many times as this one; the last to arrive
  // runs `leader_work` first.
  void arrive(const std::function<void()>& leader_work = nullptr);

  const int size_;
  SyncContext& sync_;
  const CpuCommunicatorOptions options_;
  alignas(64) WaitWord gate_;  // generation * 2 | SyncContext::kAbortBit
  alignas(64) std::atomic<int> arrived_{0};
  std::vector<Slot> slots_[2];
  std::vector<Counter> counters_;
};

// out[i - begin] = in_0[i] op in_1[i] op ... for i in [begin, end), inputs in the given order
// (`out` points at the destination of element `begin`).
void reduce_inputs(ReduceKind op, DType dtype, const void* const* ins, int n, void* out,
                   int64_t begin, int64_t end);

}  // namespace spmd::internal
