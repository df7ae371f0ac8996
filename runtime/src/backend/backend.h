// Internal: the backend seam. One Backend per device platform provides memory, op kernels
// (backend/kernels.h) and collectives over device groups (Communicator). The CPU backend
// (cpu/cpu_backend.h) is the only one today; a CUDA/NCCL backend and a multi-process backend
// implement the same three pieces without touching the public API or the ops layer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/kernels.h"
#include "spmd/device.h"
#include "spmd/dtype.h"

namespace spmd::internal {

class SyncContext;

// Device memory owned by one Array shard (or several, when shared). Returned to the backend's
// allocator on destruction.
class Buffer {
 public:
  Buffer(Device device, size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const Device& device() const { return device_; }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  Device device_;
  size_t bytes_;
  void* data_;
};

// The reductions a collective can apply.
enum class ReduceKind { kSum, kMax, kMin };

// One group of devices that run collectives together inside one mapped call. All members share
// one Communicator; each calls with its own rank (position in the group, 0..size-1). Every method
// is collective: all members call it, in the same order. A method returns once this member's
// output is complete; inputs stay alive (through `keep`) until every member has read them.
// Waiting honours the call's abort flag and deadline through the SyncContext.
class Communicator {
 public:
  using Keep = std::shared_ptr<const void>;
  virtual ~Communicator() = default;

  // out = elementwise op over every member's in (count elements of dtype), in rank order.
  virtual void all_reduce(int rank, ReduceKind op, DType dtype, int64_t count, const void* in,
                          void* out, Keep keep) = 0;
  // in is [outer][size][inner]; out[o][:] = op over q of in_q[o][rank][:] (inner elements).
  virtual void reduce_scatter(int rank, ReduceKind op, DType dtype, int64_t outer, int64_t inner,
                              const void* in, void* out, Keep keep) = 0;
  // out is [outer][size][row_bytes]; out[o][q] = in_q[o] (in is [outer][row_bytes]).
  virtual void all_gather(int rank, int64_t outer, int64_t row_bytes, const void* in, void* out,
                          Keep keep) = 0;
  // in and out are [size][chunk_bytes]; out[q] = in_q[rank].
  virtual void all_to_all(int rank, int64_t chunk_bytes, const void* in, void* out, Keep keep) = 0;
  // out = in_src (bytes), or zeros when src < 0. Every member also serves as a source.
  virtual void permute(int rank, int src, int64_t bytes, const void* in, void* out, Keep keep) = 0;
  // Returns once every member has arrived.
  virtual void barrier(int rank) = 0;
  // Wakes every member blocked in this communicator so that it sees the call's abort flag.
  virtual void wake_for_abort() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Platform platform() const = 0;

  // Memory for `bytes` bytes on `device`, 64-byte aligned. Never null for bytes > 0.
  virtual void* allocate(const Device& device, size_t bytes) = 0;
  virtual void deallocate(const Device& device, void* data, size_t bytes) = 0;
  // Whether kernels running for `reader` may read memory of `owner` directly (zero-copy).
  virtual bool can_alias(const Device& owner, const Device& reader) const = 0;
  // Copies between host memory and device memory (plain memcpy on the CPU backend).
  virtual void to_host(const Device& device, const void* src, void* host_dst,
                       size_t bytes) const = 0;
  virtual void from_host(const Device& device, const void* host_src, void* dst,
                         size_t bytes) const = 0;

  virtual const Kernels& kernels() const = 0;

  // A communicator for a group of `size` members inside the call that `sync` belongs to.
  virtual std::unique_ptr<Communicator> make_communicator(int size, SyncContext& sync) = 0;
};

// The backend of a device's platform.
Backend& backend_for(const Device& device);

}  // namespace spmd::internal
