// SPDX-License-Identifier: Apache-2.0
// Buffer (backend.h), dense strides (kernels.h) and copies between devices (transfer.h).
#include <fmt/format.h>
#include <unistd.h>

#include <cstdint>
#include <new>

#include "backend/registry.h"
#include "backend/transfer.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace {

// A dense scratch block on one device, returned to its backend on destruction.
class Scratch {
 public:
  Scratch(const Device& device, const Shape& shape, DType dtype)
      : buffer_(device, shape_size(shape) * itemsize(dtype)), shape_(shape), dtype_(dtype) {}
  MutView view() const { return MutView{buffer_.data(), dtype_, shape_, dense_strides(shape_)}; }
  ConstView const_view() const {
    return ConstView{buffer_.data(), dtype_, shape_, dense_strides(shape_)};
  }
  size_t bytes() const { return buffer_.bytes(); }
  void* data() const { return buffer_.data(); }

 private:
  Buffer buffer_;
  Shape shape_;
  DType dtype_;
};

}  // namespace

void check_host_memory(const Device& device, size_t bytes) {
  static const uint64_t host_bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page_size = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * page_size : UINT64_MAX;
  }();
  if (bytes <= host_bytes) return;
  throw ResourceExhausted(fmt::format(
      "RESOURCE_EXHAUSTED: Out of memory while trying to allocate {} bytes ({:.1f} GiB) on {}: "
      "the host has {:.1f} GiB of memory.",
      bytes, bytes / 1073741824.0, device.str(), host_bytes / 1073741824.0));
}

Buffer::Buffer(Device device, size_t bytes)
    : device_(device), backend_(&backend_for(device)), bytes_(bytes), data_(nullptr) {
  try {
    data_ = backend_->allocate(device, bytes);
  } catch (const std::bad_alloc&) {
    throw ResourceExhausted(
        fmt::format("RESOURCE_EXHAUSTED: Out of memory while trying to allocate {} bytes on {}.",
                    bytes, device.str()));
  }
}

Buffer::~Buffer() { backend_->deallocate(device_, data_, bytes_); }

void copy_between(const Device& from, const ConstView& src, const Device& to, const MutView& dst) {
  if (from.platform == to.platform) {
    backend_for(from).copy(from, src, to, dst);
    return;
  }
  // Across platforms: dense on the source device, to the host, dense on the destination device.
  Scratch packed(from, src.shape, src.dtype);
  backend_for(from).copy(from, src, from, packed.view());
  std::vector<char> host(packed.bytes());
  backend_for(from).to_host(from, packed.data(), host.data(), host.size());
  Scratch arrived(to, src.shape, src.dtype);
  backend_for(to).from_host(to, host.data(), arrived.data(), host.size());
  backend_for(to).copy(to, arrived.const_view(), to, dst);
}

}  // namespace spmd::internal
