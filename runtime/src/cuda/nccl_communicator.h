// SPDX-License-Identifier: Apache-2.0
// Internal to the CUDA backend: communicators whose members are on different GPUs, one member
// per GPU, through NCCL (which allows one rank per GPU). The members create their ranks together
// with ncclCommInitRankConfig in nonblocking mode, polling for completion so that creation
// honours the call's abort and deadline; collectives are enqueued on the member's stream
// (NCCL's order of reduction is its own: float sums may differ from the CPU's rank order, and
// float16/bfloat16 sums are computed in those types). abort() is ncclCommAbort, which releases
// every rank (from any thread: every use of the handle holds a lock that abort() takes too);
// NCCL's asynchronous errors are polled while a call settles and at release().
// The members of one communicator live in this process: they meet on the host (LocalExchange)
// to share NCCL's unique id and, for ppermute, who sends to whom.
#pragma once

#include <nccl.h>

#include <memory>
#include <mutex>

#include "backend/backend.h"
#include "cuda/cuda_communicator.h"
#include "cuda/cuda_devices.h"

namespace spmd::internal::cuda {

// What the members of one NCCL communicator share: the host meeting point and NCCL's id.
struct NcclShared {
  explicit NcclShared(int size);
  LocalExchange exchange;
  ncclUniqueId id{};
};

class NcclCommunicator final : public Communicator {
 public:
  // Creates rank `rank` of the communicator (waits for every member, honouring `cancel`).
  NcclCommunicator(std::shared_ptr<NcclShared> shared, int rank, int size,
                   const LogicalDevice& device, Cancel& cancel);
  ~NcclCommunicator() override;

  void all_reduce(ReduceKind op, DType dtype, int64_t count, const void* in, void* out,
                  const Keep& keep, Cancel& cancel) override;
  void reduce_scatter(ReduceKind op, DType dtype, int64_t outer, int64_t inner, const void* in,
                      void* out, const Keep& keep, Cancel& cancel) override;
  void all_gather(int64_t outer, int64_t row_bytes, const void* in, void* out, const Keep& keep,
                  Cancel& cancel) override;
  void all_to_all(int64_t chunk_bytes, const void* in, void* out, const Keep& keep,
                  Cancel& cancel) override;
  void permute(int src, int64_t bytes, const void* in, void* out, const Keep& keep,
               Cancel& cancel) override;
  void barrier(Cancel& cancel) override;
  void abort() override;
  bool release() override;

 private:
  // Enqueues f(comm) under the handle's lock, then waits until the nonblocking call has finished
  // (honouring `cancel`); throws on NCCL's error, or the call's abort once abort() ran.
  template <class F>
  void run(const char* what, Cancel& cancel, F f);
  // The same for a group of calls: ncclGroupStart(), add(comm), ncclGroupEnd().
  template <class F>
  void run_group(const char* what, Cancel& cancel, F add);
  void settle(ncclResult_t status, const char* what, Cancel& cancel);

  std::shared_ptr<NcclShared> shared_;
  int rank_;
  int size_;
  const LogicalDevice& device_;
  std::mutex mu_;
  ncclComm_t comm_ = nullptr;  // guarded by mu_; null once aborted
};

}  // namespace spmd::internal::cuda
