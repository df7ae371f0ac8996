// SPDX-License-Identifier: Apache-2.0
// Internal to the CUDA backend: communicators among logical devices of one GPU
// (SPMD_CUDA_DEVICES_PER_GPU > 1). NCCL allows one rank per GPU, so these never call it: the
// members meet on the host (LocalExchange) to swap buffer addresses and CUDA events, then each
// member enqueues on its own stream the copies or the reduction kernel that make its output from
// the others' inputs, in stream order:
//   1. record `ready` on its stream (its input is complete), post {in, out, ready}, wait for all;
//   2. make its stream wait for every member's `ready`, enqueue its work (reads the others'
//      inputs, writes its own output);
//   3. record `done`, post it, wait for all, and make its stream wait for every member's `done`,
//      so that nothing later on any member's stream (a free, an overwrite of its input) runs
//      before every reader has read.
// Reductions combine members in rank order with the CPU's rules (fold_members), so results
// equal the CPU backend's bit for bit.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"
#include "cuda/cuda_devices.h"

namespace spmd::internal::cuda {

// The host meeting point of one communicator's members (shared through the Rendezvous).
class LocalExchange {
 public:
  struct Posting {
    const void* in = nullptr;
    void* out = nullptr;
    cudaEvent_t event = nullptr;
    int src = -1;  // permute's source rank
  };

  explicit LocalExchange(int size);
  // Publishes rank's posting and waits until every member has posted; returns everyone's, valid
  // until this rank's next exchange().
  const std::vector<Posting>& exchange(int rank, const Posting& posting, Cancel& cancel);
  // Releases every waiter, now and later.
  void abort();
  bool aborted() const;

 private:
  using Clock = Cancel::Clock;
  void wait_for_all(Cancel& cancel);

  const int size_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  bool aborted_ = false;
  std::vector<Posting> postings_[2];  // by generation parity: a fast member may post the next
  std::vector<uint64_t> exchanges_;   // per rank, how many exchanges it began
};

class LocalCommunicator final : public Communicator {
 public:
  LocalCommunicator(std::shared_ptr<LocalExchange> exchange, int rank, int size,
                    const LogicalDevice& device);
  ~LocalCommunicator() override;

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
  void abort() override { exchange_->abort(); }
  bool release() override { return !exchange_->aborted(); }

 private:
  // Steps 1-3 of the file comment around `work`, which enqueues this member's part.
  template <class F>
  void run(const void* in, void* out, int src, Cancel& cancel, const F& work);

  std::shared_ptr<LocalExchange> exchange_;
  int rank_;
  int size_;
  const LogicalDevice& device_;
  cudaEvent_t ready_ = nullptr;
  cudaEvent_t done_ = nullptr;
};

}  // namespace spmd::internal::cuda
