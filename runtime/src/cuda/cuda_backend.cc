// SPDX-License-Identifier: Apache-2.0
// The CUDA backend (cuda_backend.h): device enumeration, stream-ordered memory, transfers,
// copies between devices, kernels and communicators.
#include "cuda/cuda_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/hierarchical_communicator.h"
#include "backend/registry.h"
#include "cuda/cuda_check.h"
#include "cuda/cuda_communicator.h"
#include "cuda/cuda_devices.h"
#include "cuda/nccl_communicator.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace cuda {

void use_gpu(int gpu) { check(cudaSetDevice(gpu), fmt::format("cudaSetDevice({})", gpu)); }

namespace {

// The most logical devices per GPU: a collective among them folds up to kMaxFoldMembers inputs.
constexpr int kMaxDevicesPerGpu = kMaxFoldMembers;

// SPMD_CUDA_DEVICES_PER_GPU, 1 to kMaxDevicesPerGpu (default 1).
int devices_per_gpu() {
  const char* text = std::getenv("SPMD_CUDA_DEVICES_PER_GPU");
  if (text == nullptr || *text == '\0') return 1;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 1 || value > kMaxDevicesPerGpu) {
    throw ValueError(fmt::format(
        "environment variable SPMD_CUDA_DEVICES_PER_GPU='{}' must be an integer from 1 to {} (how "
        "many spmd devices share each GPU); unset it for one device per GPU",
        text, kMaxDevicesPerGpu));
  }
  return static_cast<int>(value);
}

// One event recorded on `on`'s stream, waited for on `waiter`'s stream: everything enqueued on
// `on` so far happens before anything enqueued on `waiter` from now on.
void order_after(const LogicalDevice& on, const LogicalDevice& waiter) {
  if (on.stream == waiter.stream) return;
  use_gpu(on.gpu);
  cudaEvent_t event;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  check(cudaEventRecord(event, on.stream), "cudaEventRecord");
  use_gpu(waiter.gpu);
  const cudaError_t status = cudaStreamWaitEvent(waiter.stream, event, 0);
  cudaEventDestroy(event);  // released once the wait is over
  check(status, "cudaStreamWaitEvent");
}

bool dense(const Shape& shape, const Strides& strides) { return strides == dense_strides(shape); }

class CudaBackend final : public Backend {
 public:
  CudaBackend() {
    int gpus = 0;
    const cudaError_t status = cudaGetDeviceCount(&gpus);
    if (status != cudaSuccess) {
      absent_ = fmt::format("cudaGetDeviceCount: {}: {}", cudaGetErrorName(status),
                            cudaGetErrorString(status));
      cudaGetLastError();  // clear the sticky-free error so later calls do not report it
      return;
    }
    if (gpus == 0) {
      absent_ = "cudaGetDeviceCount found no GPU";
      return;
    }
    const int per_gpu = devices_per_gpu();
    gpus_ = gpus;
    devices_.resize(static_cast<size_t>(gpus) * per_gpu);
    for (int gpu = 0; gpu < gpus; ++gpu) keep_freed_memory(gpu);
    for (size_t d = 0; d < devices_.size(); ++d) set_up(devices_[d], static_cast<int>(d) / per_gpu);
  }

  ~CudaBackend() override {
    // Backends live until exit (the registry never destroys them); this runs only when a
    // platforms setting is refused after the backend was made.
    for (LogicalDevice& d : devices_) {
      if (d.blas != nullptr) cublasDestroy(d.blas);
      if (d.stream != nullptr) cudaStreamDestroy(d.stream);
    }
  }

  Platform platform() const override { return Platform::kCuda; }
  int device_count() const override { return static_cast<int>(devices_.size()); }
  std::string absent_reason() const override { return absent_; }
  std::string more_devices_advice(int64_t wanted) const override {
    if (gpus_ == 0) return "";
    const char* plural = gpus_ == 1 ? "" : "s";
    const int64_t per_gpu = (wanted + gpus_ - 1) / gpus_;
    if (per_gpu > kMaxDevicesPerGpu) {
      return fmt::format(
          "more GPUs: {} GPU{} hold at most {} spmd devices, with "
          "SPMD_CUDA_DEVICES_PER_GPU={}",
          gpus_, plural, gpus_ * kMaxDevicesPerGpu, kMaxDevicesPerGpu);
    }
    return fmt::format("SPMD_CUDA_DEVICES_PER_GPU={} puts {} spmd devices on each of the {} GPU{}",
                       per_gpu, per_gpu, gpus_, plural);
  }

  void* allocate(const Device& device, size_t bytes) override {
    const LogicalDevice& d = at(device);
    use_gpu(d.gpu);
    void* data = nullptr;
    check(cudaMallocAsync(&data, std::max<size_t>(bytes, 1), d.stream),
          fmt::format("cudaMallocAsync of {} bytes on {}", bytes, device.str()));
    return data;
  }

  void deallocate(const Device& device, void* data, size_t) override {
    const LogicalDevice& d = at(device);
    // In stream order: work already enqueued on the device (and, through order_after, readers on
    // other streams) finishes first. A failure here cannot be reported (a destructor calls this).
    if (cudaSetDevice(d.gpu) == cudaSuccess) cudaFreeAsync(data, d.stream);
  }

  // A device's kernels run on its own stream: memory of another device is read through copy(),
  // which orders the two streams.
  bool can_alias(const Device& owner, const Device& reader) const override {
    return owner == reader;
  }

  void to_host(const Device& device, const void* src, void* host_dst, size_t bytes) const override {
    const LogicalDevice& d = at(device);
    use_gpu(d.gpu);
    check(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, d.stream),
          "cudaMemcpyAsync (device to host)");
    check(cudaStreamSynchronize(d.stream),
          fmt::format("cudaStreamSynchronize on {} (the device's earlier work failed)",
                      device.str()));
  }

  void from_host(const Device& device, const void* host_src, void* dst,
                 size_t bytes) const override {
    const LogicalDevice& d = at(device);
    use_gpu(d.gpu);
    check(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, d.stream),
          "cudaMemcpyAsync (host to device)");
    // The host buffer may be freed once this returns.
    check(cudaStreamSynchronize(d.stream), "cudaStreamSynchronize (host to device)");
  }

  void copy(const Device& from, const ConstView& src, const Device& to,
            const MutView& dst) const override {
    const LogicalDevice& a = at(from);
    const LogicalDevice& b = at(to);
    order_after(a, b);  // src is complete
    use_gpu(b.gpu);
    if (a.gpu == b.gpu) {
      b.kernels->copy(src, dst);
    } else {
      copy_between_gpus(a, src, b, dst);
    }
    order_after(b, a);  // later work on `from` (freeing src) waits for the read
  }

  const Kernels& kernels(const Device& device) const override {
    const LogicalDevice& d = at(device);
    use_gpu(d.gpu);
    return *d.kernels;
  }

  // Devices of one GPU meet through host memory and device copies (NCCL allows one rank per
  // GPU); devices of different GPUs, one each, through NCCL; a group with several devices on
  // some GPU and more than one GPU through both (backend/hierarchical_communicator.h).
  std::unique_ptr<Communicator> make_communicator(const std::vector<Device>& members, int rank,
                                                  Rendezvous& rendezvous, Cancel& cancel) override {
    const int size = static_cast<int>(members.size());
    std::vector<int> gpu_of;
    for (const Device& m : members) gpu_of.push_back(at(m).gpu);
    const NodeLayout layout(gpu_of);
    if (layout.mixed()) {
      return make_hierarchical_communicator(*this, members, layout, rank, rendezvous, cancel);
    }
    if (layout.nodes() == 1) {
      std::shared_ptr<LocalExchange> exchange = rendezvous.shared<LocalExchange>(
          [size] { return std::make_shared<LocalExchange>(size); });
      return std::make_unique<LocalCommunicator>(std::move(exchange), rank, size,
                                                 at(members[rank]));
    }
    std::shared_ptr<NcclShared> shared =
        rendezvous.shared<NcclShared>([size] { return std::make_shared<NcclShared>(size); });
    return std::make_unique<NcclCommunicator>(std::move(shared), rank, size, at(members[rank]),
                                              cancel);
  }

 private:
  const LogicalDevice& at(const Device& device) const {
    return devices_.at(static_cast<size_t>(device.id));
  }

  // Freed blocks stay in the GPU's pool instead of going back to the driver at every
  // synchronisation (the CPU backend's caching allocator, done by CUDA).
  static void keep_freed_memory(int gpu) {
    use_gpu(gpu);
    cudaMemPool_t pool;
    check(cudaDeviceGetDefaultMemPool(&pool, gpu), "cudaDeviceGetDefaultMemPool");
    uint64_t keep = std::numeric_limits<uint64_t>::max();
    check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep),
          "cudaMemPoolSetAttribute");
  }

  static void set_up(LogicalDevice& d, int gpu) {
    d.gpu = gpu;
    use_gpu(gpu);
    check(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cublasCreate(&d.blas), "cublasCreate");
    check(cublasSetStream(d.blas, d.stream), "cublasSetStream");
    d.kernels = std::make_unique<CudaKernels>(d.stream, d.blas);
  }

  // Dense views go peer to peer as they are; others are packed densely on the source GPU and
  // unpacked on the destination.
  void copy_between_gpus(const LogicalDevice& a, const ConstView& src, const LogicalDevice& b,
                         const MutView& dst) const {
    const size_t bytes = static_cast<size_t>(shape_size(src.shape) * itemsize(src.dtype));
    if (dense(src.shape, src.strides) && dense(dst.shape, dst.strides)) {
      check(cudaMemcpyPeerAsync(dst.data, b.gpu, src.data, a.gpu, bytes, b.stream),
            "cudaMemcpyPeerAsync");
      return;
    }
    const Strides packed = dense_strides(src.shape);
    void* on_a = nullptr;
    void* on_b = nullptr;
    use_gpu(b.gpu);
    check(cudaMallocAsync(&on_b, std::max<size_t>(bytes, 1), b.stream), "cudaMallocAsync");
    use_gpu(a.gpu);
    check(cudaMallocAsync(&on_a, std::max<size_t>(bytes, 1), a.stream), "cudaMallocAsync");
    a.kernels->copy(src, MutView{on_a, src.dtype, src.shape, packed});
    order_after(a, b);
    use_gpu(b.gpu);
    check(cudaMemcpyPeerAsync(on_b, b.gpu, on_a, a.gpu, bytes, b.stream), "cudaMemcpyPeerAsync");
    b.kernels->copy(ConstView{on_b, src.dtype, src.shape, packed}, dst);
    check(cudaFreeAsync(on_b, b.stream), "cudaFreeAsync");
    order_after(b, a);
    use_gpu(a.gpu);
    check(cudaFreeAsync(on_a, a.stream), "cudaFreeAsync");
  }

  int gpus_ = 0;
  std::vector<LogicalDevice> devices_;
  std::string absent_;
};

}  // namespace
}  // namespace cuda

void register_cuda_backend() {
  // Below "cpu": a program keeps running on the CPU, with the CPU's results, on a machine that
  // happens to have a GPU, until it asks for "cuda" (SPMD_PLATFORMS=cuda, devices("cuda")).
  register_backend({.platform = Platform::kCuda, .preference = -1, .create = [] {
                      return std::make_unique<cuda::CudaBackend>();
                    }});
}

}  // namespace spmd::internal
