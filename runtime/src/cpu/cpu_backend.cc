// SPDX-License-Identifier: Apache-2.0
// The CPU backend: a caching host allocator, the CPU kernels and shared-memory communicators.
// It registers as the "cpu" platform (backend/registry.h).
#include "cpu/cpu_backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/registry.h"
#include "cpu/cpu_communicator.h"
#include "cpu/cpu_kernels.h"
#include "settings.h"

namespace spmd::internal {
namespace {

// Freed blocks are kept per device and size, because a collective or op in a loop allocates the
// same sizes again at once; returning large blocks to the OS would make every call pay page
// faults (a 64 MiB psum output costs more to fault in than to compute).
// One pool per device, each with its own lock: a device's thread allocates and frees mostly its
// own buffers, so the locks are almost never contended (a shared lock made every device wait for
// the others, and a preempted holder stalled them all when devices outnumber cores).
class CachingAllocator {
 public:
  CachingAllocator() : pools_(kMaxDevices) {}

  void* allocate(int device, size_t bytes) {
    bytes = rounded(bytes);
    Pool& pool = pools_[device % kMaxDevices];
    {
      std::lock_guard<std::mutex> lock(pool.mu);
      std::vector<void*>& free_list = pool.free[bytes];
      if (!free_list.empty()) {
        void* p = free_list.back();
        free_list.pop_back();
        pool.cached_bytes -= bytes;
        return p;
      }
    }
    void* p = std::aligned_alloc(64, bytes);
    if (p == nullptr) throw std::bad_alloc();
    return p;
  }

  void deallocate(int device, void* p, size_t bytes) {
    bytes = rounded(bytes);
    Pool& pool = pools_[device % kMaxDevices];
    {
      std::lock_guard<std::mutex> lock(pool.mu);
      std::vector<void*>& free_list = pool.free[bytes];
      if (free_list.size() < kMaxPerSize && pool.cached_bytes + bytes <= kMaxCachedBytes) {
        free_list.push_back(p);
        pool.cached_bytes += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  static constexpr size_t kMaxDevices = 256;  // devices beyond this share pools
  static constexpr size_t kMaxPerSize = 8;
  static constexpr size_t kMaxCachedBytes = size_t{512} << 20;

  struct alignas(64) Pool {
    std::mutex mu;
    std::unordered_map<size_t, std::vector<void*>> free;
    size_t cached_bytes = 0;
  };

  // At least one cache line, so that empty arrays still have a valid address.
  static size_t rounded(size_t bytes) { return (std::max<size_t>(bytes, 1) + 63) / 64 * 64; }

  std::vector<Pool> pools_;
};

class CpuBackend final : public Backend {
 public:
  Platform platform() const override { return Platform::kCpu; }
  int device_count() const override { return settings().cpu_devices; }
  std::string more_devices_advice(int64_t wanted) const override {
    return fmt::format("spmd::initialize({{.cpu_devices = {}}}) or SPMD_CPU_DEVICES={}", wanted,
                       wanted);
  }
  void* allocate(const Device& device, size_t bytes) override {
    check_host_memory(device, bytes);
    return allocator_.allocate(device.id, bytes);
  }
  void deallocate(const Device& device, void* data, size_t bytes) override {
    allocator_.deallocate(device.id, data, bytes);
  }
  // Every CPU device is a thread of this process over host memory.
  bool can_alias(const Device&, const Device&) const override { return true; }
  void to_host(const Device&, const void* src, void* dst, size_t bytes) const override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void from_host(const Device&, const void* src, void* dst, size_t bytes) const override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy(const Device&, const ConstView& src, const Device&, const MutView& dst) const override {
    cpu_kernels().copy(src, dst);
  }
  const Kernels& kernels(const Device&) const override { return cpu_kernels(); }
  std::unique_ptr<Communicator> make_communicator(const std::vector<Device>& members, int rank,
                                                  Rendezvous& rendezvous, Cancel&) override {
    const int size = static_cast<int>(members.size());
    std::shared_ptr<CpuExchange> exchange =
        rendezvous.shared<CpuExchange>([size] { return std::make_shared<CpuExchange>(size); });
    return std::make_unique<CpuCommunicator>(std::move(exchange), rank);
  }

 private:
  CachingAllocator allocator_;
};

}  // namespace

void register_cpu_backend() {
  register_backend({.platform = Platform::kCpu, .preference = 0, .create = [] {
                      return std::make_unique<CpuBackend>();
                    }});
}

}  // namespace spmd::internal
