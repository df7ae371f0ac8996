// SPDX-License-Identifier: Apache-2.0
// Communicators between GPUs through NCCL (nccl_communicator.h).
#include "cuda/nccl_communicator.h"

#include <fmt/format.h>

#include <thread>
#include <utility>
#include <vector>

#include "cuda/cuda_check.h"
#include "cuda/stream_scratch.h"
#include "spmd/errors.h"

namespace spmd::internal::cuda {
namespace {

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return ncclUint8;
    case DType::kInt32:
      return ncclInt32;
    case DType::kInt64:
      return ncclInt64;
    case DType::kUInt32:
      return ncclUint32;
    case DType::kFloat16:
      return ncclFloat16;
    case DType::kBFloat16:
      return ncclBfloat16;
    case DType::kFloat32:
      return ncclFloat32;
    case DType::kFloat64:
      return ncclFloat64;
    case DType::kInt8:
      return ncclInt8;
    case DType::kUInt8:
      return ncclUint8;
    case DType::kUInt64:
      return ncclUint64;
    case DType::kInt16:
    case DType::kUInt16:
      throw NotImplementedError(
          fmt::format("a reduction of {} between GPUs: NCCL has no 16-bit integer type. Reduce an "
                      "astype(int32) "
                      "copy and convert back.",
                      dtype_name(dtype)));
    case DType::kComplex64:
    case DType::kComplex128:
      break;  // collectives.cc reduces complex values as pairs of their real type
  }
  throw ValueError(fmt::format("invalid dtype {}", static_cast<int>(dtype)));
}

ncclRedOp_t nccl_op(ReduceKind op) {
  switch (op) {
    case ReduceKind::kSum:
      return ncclSum;
    case ReduceKind::kMax:
      return ncclMax;
    case ReduceKind::kMin:
      return ncclMin;
  }
  throw ValueError("invalid reduction");
}

}  // namespace

NcclShared::NcclShared(int size) : exchange(size) {}

NcclCommunicator::NcclCommunicator(std::shared_ptr<NcclShared> shared, int rank, int size,
                                   const LogicalDevice& device, Cancel& cancel)
    : shared_(std::move(shared)), rank_(rank), size_(size), device_(device) {
  // Rank 0 makes the id before the others read it: the exchange orders the two.
  ncclResult_t made = ncclSuccess;
  if (rank_ == 0) made = ncclGetUniqueId(&shared_->id);
  if (made != ncclSuccess) {
    shared_->exchange.abort();
    throw RuntimeError(fmt::format("NCCL error in ncclGetUniqueId: {}", ncclGetErrorString(made)));
  }
  shared_->exchange.exchange(rank_, {}, cancel);
  use_gpu(device_.gpu);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // so that creation can be abandoned at the deadline or on abort
  ncclResult_t status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status = ncclCommInitRankConfig(&comm_, size_, shared_->id, rank_, &config);
  }
  try {
    settle(status, "ncclCommInitRankConfig", cancel);
  } catch (...) {
    abort();  // no destructor runs after a throwing constructor: release comm_ and the peers here
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() { abort(); }

template <class F>
void NcclCommunicator::run(const char* what, Cancel& cancel, F f) {
  use_gpu(device_.gpu);
  ncclResult_t status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (comm_ == nullptr) cancel.throw_aborted();
    status = f(comm_);
  }
  settle(status, what, cancel);
}

template <class F>
void NcclCommunicator::run_group(const char* what, Cancel& cancel, F add) {
  run(what, cancel, [&](ncclComm_t comm) {
    ncclResult_t status = ncclGroupStart();
    if (status == ncclSuccess) status = add(comm);
    const ncclResult_t end = ncclGroupEnd();
    return status != ncclSuccess ? status : end;
  });
}

void NcclCommunicator::settle(ncclResult_t status, const char* what, Cancel& cancel) {
  Cancel::Clock::time_point deadline = cancel.deadline();
  while (status == ncclInProgress) {
    if (cancel.aborted()) {
      abort();
      cancel.throw_aborted();
    }
    if (Cancel::Clock::now() >= deadline) {
      cancel.deadline_passed();  // aborts the call and throws, or moves the deadline
      deadline = cancel.deadline();
    }
    std::this_thread::yield();
    std::lock_guard<std::mutex> lock(mu_);
    if (comm_ == nullptr) cancel.throw_aborted();
    ncclCommGetAsyncError(comm_, &status);
  }
  if (status != ncclSuccess) {
    std::lock_guard<std::mutex> lock(mu_);
    throw RuntimeError(fmt::format("NCCL error in {} on GPU {}: {} ({})", what, device_.gpu,
                                   ncclGetErrorString(status),
                                   comm_ != nullptr ? ncclGetLastError(comm_) : "aborted"));
  }
}

void NcclCommunicator::all_reduce(ReduceKind op, DType dtype, int64_t count, const void* in,
                                  void* out, const Keep&, Cancel& cancel) {
  run("ncclAllReduce", cancel, [&](ncclComm_t comm) {
    return ncclAllReduce(in, out, static_cast<size_t>(count), nccl_type(dtype), nccl_op(op), comm,
                         device_.stream);
  });
}

void NcclCommunicator::reduce_scatter(ReduceKind op, DType dtype, int64_t outer, int64_t inner,
                                      const void* in, void* out, const Keep&, Cancel& cancel) {
  use_gpu(device_.gpu);
  const int64_t item = itemsize(dtype);
  const void* send = in;
  std::unique_ptr<StreamScratch> packed;
  if (outer > 1) {
    // [outer][size][inner] -> [size][outer][inner], the layout NCCL scatters.
    packed = std::make_unique<StreamScratch>(device_.stream, outer * size_ * inner * item);
    for (int q = 0; q < size_; ++q) {
      check(cudaMemcpy2DAsync(static_cast<char*>(packed->data()) + q * outer * inner * item,
                              inner * item, static_cast<const char*>(in) + q * inner * item,
                              size_ * inner * item, inner * item, outer, cudaMemcpyDeviceToDevice,
                              device_.stream),
            "cudaMemcpy2DAsync (psum_scatter)");
    }
    send = packed->data();
  }
  run("ncclReduceScatter", cancel, [&](ncclComm_t comm) {
    return ncclReduceScatter(send, out, static_cast<size_t>(outer * inner), nccl_type(dtype),
                             nccl_op(op), comm, device_.stream);
  });
}

void NcclCommunicator::all_gather(int64_t outer, int64_t row_bytes, const void* in, void* out,
                                  const Keep&, Cancel& cancel) {
  if (outer == 1) {
    run("ncclAllGather", cancel, [&](ncclComm_t comm) {
      return ncclAllGather(in, out, static_cast<size_t>(row_bytes), ncclUint8, comm,
                           device_.stream);
    });
    return;
  }
  // NCCL gathers [size][outer][row]; spmd's layout is [outer][size][row].
  use_gpu(device_.gpu);
  StreamScratch gathered(device_.stream, size_ * outer * row_bytes);
  run("ncclAllGather", cancel, [&](ncclComm_t comm) {
    return ncclAllGather(in, gathered.data(), static_cast<size_t>(outer * row_bytes), ncclUint8,
                         comm, device_.stream);
  });
  for (int q = 0; q < size_; ++q) {
    check(cudaMemcpy2DAsync(static_cast<char*>(out) + q * row_bytes, size_ * row_bytes,
                            static_cast<const char*>(gathered.data()) + q * outer * row_bytes,
                            row_bytes, row_bytes, outer, cudaMemcpyDeviceToDevice, device_.stream),
          "cudaMemcpy2DAsync (all_gather)");
  }
}

void NcclCommunicator::all_to_all(int64_t chunk_bytes, const void* in, void* out, const Keep&,
                                  Cancel& cancel) {
  const auto chunk = static_cast<size_t>(chunk_bytes);
  run_group("ncclSend/ncclRecv (all_to_all)", cancel, [&](ncclComm_t comm) {
    ncclResult_t status = ncclSuccess;
    for (int q = 0; q < size_ && status == ncclSuccess; ++q) {
      status = ncclSend(static_cast<const char*>(in) + q * chunk_bytes, chunk, ncclUint8, q, comm,
                        device_.stream);
      if (status == ncclSuccess) {
        status = ncclRecv(static_cast<char*>(out) + q * chunk_bytes, chunk, ncclUint8, q, comm,
                          device_.stream);
      }
    }
    return status;
  });
}

void NcclCommunicator::permute(int src, int64_t bytes, const void* in, void* out, const Keep&,
                               Cancel& cancel) {
  // Every member learns on the host who reads from it, then sends to its readers.
  const std::vector<LocalExchange::Posting>& members =
      shared_->exchange.exchange(rank_, {in, out, nullptr, src}, cancel);
  std::vector<int> readers;
  for (int q = 0; q < size_; ++q) {
    if (members[q].src == rank_) readers.push_back(q);
  }
  if (src < 0) {
    use_gpu(device_.gpu);
    check(cudaMemsetAsync(out, 0, static_cast<size_t>(bytes), device_.stream),
          "cudaMemsetAsync (ppermute)");
  }
  run_group("ncclSend/ncclRecv (ppermute)", cancel, [&](ncclComm_t comm) {
    ncclResult_t status = ncclSuccess;
    for (int q : readers) {
      if (status == ncclSuccess) {
        status = ncclSend(in, static_cast<size_t>(bytes), ncclUint8, q, comm, device_.stream);
      }
    }
    if (src >= 0 && status == ncclSuccess) {
      status = ncclRecv(out, static_cast<size_t>(bytes), ncclUint8, src, comm, device_.stream);
    }
    return status;
  });
}

void NcclCommunicator::barrier(Cancel& cancel) { shared_->exchange.exchange(rank_, {}, cancel); }

void NcclCommunicator::abort() {
  shared_->exchange.abort();
  // Releases this rank's NCCL work, queued or running, so that its stream moves on.
  std::lock_guard<std::mutex> lock(mu_);
  if (comm_ != nullptr) ncclCommAbort(std::exchange(comm_, nullptr));
}

bool NcclCommunicator::release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (comm_ == nullptr || shared_->exchange.aborted()) return false;
  ncclResult_t state = ncclSuccess;
  return ncclCommGetAsyncError(comm_, &state) == ncclSuccess && state == ncclSuccess;
}

}  // namespace spmd::internal::cuda
