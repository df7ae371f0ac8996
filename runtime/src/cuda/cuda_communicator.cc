// SPDX-License-Identifier: Apache-2.0
// Communicators among logical devices of one GPU (cuda_communicator.h).
#include "cuda/cuda_communicator.h"

#include <algorithm>
#include <chrono>

#include "cuda/cuda_check.h"
#include "spmd/dtype.h"

namespace spmd::internal::cuda {

LocalExchange::LocalExchange(int size)
    : size_(size),
      postings_{std::vector<Posting>(size), std::vector<Posting>(size)},
      exchanges_(size, 0) {}

const std::vector<LocalExchange::Posting>& LocalExchange::exchange(int rank, const Posting& posting,
                                                                   Cancel& cancel) {
  std::vector<Posting>* set;
  {
    std::lock_guard<std::mutex> lock(mu_);
    set = &postings_[exchanges_[rank]++ & 1];
    (*set)[rank] = posting;
  }
  wait_for_all(cancel);
  return *set;
}

void LocalExchange::wait_for_all(Cancel& cancel) {
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t generation = generation_;
  if (++arrived_ == size_) {
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  Clock::time_point deadline = cancel.deadline();
  while (generation_ == generation) {
    if (aborted_ || cancel.aborted()) {
      lock.unlock();
      cancel.throw_aborted();
    }
    if (Clock::now() >= deadline) {
      lock.unlock();
      cancel.deadline_passed();  // throws, or moves the deadline
      lock.lock();
      deadline = cancel.deadline();
      continue;
    }
    // Woken by the last member or abort(); the poll catches an abort of the call that reached
    // this communicator only through Cancel.
    cv_.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(20)));
  }
}

void LocalExchange::abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  cv_.notify_all();
}

bool LocalExchange::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

LocalCommunicator::LocalCommunicator(std::shared_ptr<LocalExchange> exchange, int rank, int size,
                                     const LogicalDevice& device)
    : exchange_(std::move(exchange)), rank_(rank), size_(size), device_(device) {
  use_gpu(device_.gpu);
  check(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming), "cudaEventCreateWithFlags");
}

LocalCommunicator::~LocalCommunicator() {
  // Destroying an event that queued work still waits on is allowed: CUDA frees it afterwards.
  cudaEventDestroy(ready_);
  cudaEventDestroy(done_);
}

template <class F>
void LocalCommunicator::run(const void* in, void* out, int src, Cancel& cancel, const F& work) {
  use_gpu(device_.gpu);
  const cudaStream_t stream = device_.stream;
  check(cudaEventRecord(ready_, stream), "cudaEventRecord");
  const std::vector<LocalExchange::Posting>& members =
      exchange_->exchange(rank_, {in, out, ready_, src}, cancel);
  for (int q = 0; q < size_; ++q) {
    if (q != rank_) check(cudaStreamWaitEvent(stream, members[q].event, 0), "cudaStreamWaitEvent");
  }
  work(members);
  check(cudaEventRecord(done_, stream), "cudaEventRecord");
  const std::vector<LocalExchange::Posting>& finished =
      exchange_->exchange(rank_, {in, out, done_, src}, cancel);
  for (int q = 0; q < size_; ++q) {
    if (q != rank_) check(cudaStreamWaitEvent(stream, finished[q].event, 0), "cudaStreamWaitEvent");
  }
}

void LocalCommunicator::all_reduce(ReduceKind op, DType dtype, int64_t count, const void* in,
                                   void* out, const Keep&, Cancel& cancel) {
  run(in, out, -1, cancel, [&](const std::vector<LocalExchange::Posting>& members) {
    std::vector<const void*> ins(size_);
    for (int q = 0; q < size_; ++q) ins[q] = members[q].in;
    fold_members(device_.stream, op, dtype, ins.data(), size_, out, 1, count, 0, 0);
  });
}

void LocalCommunicator::reduce_scatter(ReduceKind op, DType dtype, int64_t outer, int64_t inner,
                                       const void* in, void* out, const Keep&, Cancel& cancel) {
  run(in, out, -1, cancel, [&](const std::vector<LocalExchange::Posting>& members) {
    std::vector<const void*> ins(size_);
    for (int q = 0; q < size_; ++q) ins[q] = members[q].in;
    fold_members(device_.stream, op, dtype, ins.data(), size_, out, outer, inner, size_ * inner,
                 rank_ * inner);
  });
}

void LocalCommunicator::all_gather(int64_t outer, int64_t row_bytes, const void* in, void* out,
                                   const Keep&, Cancel& cancel) {
  run(in, out, -1, cancel, [&](const std::vector<LocalExchange::Posting>& members) {
    if (outer * row_bytes == 0) return;
    for (int q = 0; q < size_; ++q) {
      check(cudaMemcpy2DAsync(static_cast<char*>(out) + q * row_bytes, size_ * row_bytes,
                              members[q].in, row_bytes, row_bytes, outer, cudaMemcpyDeviceToDevice,
                              device_.stream),
            "cudaMemcpy2DAsync (all_gather)");
    }
  });
}

void LocalCommunicator::all_to_all(int64_t chunk_bytes, const void* in, void* out, const Keep&,
                                   Cancel& cancel) {
  run(in, out, -1, cancel, [&](const std::vector<LocalExchange::Posting>& members) {
    if (chunk_bytes == 0) return;
    for (int q = 0; q < size_; ++q) {
      check(cudaMemcpyAsync(static_cast<char*>(out) + q * chunk_bytes,
                            static_cast<const char*>(members[q].in) + rank_ * chunk_bytes,
                            chunk_bytes, cudaMemcpyDeviceToDevice, device_.stream),
            "cudaMemcpyAsync (all_to_all)");
    }
  });
}

void LocalCommunicator::permute(int src, int64_t bytes, const void* in, void* out, const Keep&,
                                Cancel& cancel) {
  run(in, out, src, cancel, [&](const std::vector<LocalExchange::Posting>& members) {
    if (bytes == 0) return;
    if (src < 0) {
      check(cudaMemsetAsync(out, 0, bytes, device_.stream), "cudaMemsetAsync (ppermute)");
      return;
    }
    check(cudaMemcpyAsync(out, members[src].in, bytes, cudaMemcpyDeviceToDevice, device_.stream),
          "cudaMemcpyAsync (ppermute)");
  });
}

void LocalCommunicator::barrier(Cancel& cancel) { exchange_->exchange(rank_, {}, cancel); }

}  // namespace spmd::internal::cuda
