// SPDX-License-Identifier: Apache-2.0
// Internal to the CUDA backend: device memory for the duration of one kernel's or collective's
// work, allocated and freed in the order of one stream (so the free waits for the work enqueued
// before it).
//
//   StreamScratch packed(stream, bytes);
//   kernel<<<..., stream>>>(packed.as<float>());  // freed after the kernel, in stream order
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>

#include "cuda/cuda_check.h"

namespace spmd::internal::cuda {

class StreamScratch {
 public:
  StreamScratch(cudaStream_t stream, size_t bytes) : stream_(stream) {
    check(cudaMallocAsync(&data_, std::max<size_t>(bytes, 1), stream), "cudaMallocAsync (scratch)");
  }
  ~StreamScratch() { cudaFreeAsync(data_, stream_); }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;

  void* data() const { return data_; }
  template <class C>
  C* as() const {
    return static_cast<C*>(data_);
  }

 private:
  cudaStream_t stream_;
  void* data_ = nullptr;
};

}  // namespace spmd::internal::cuda
