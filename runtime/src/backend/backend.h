// SPDX-License-Identifier: Apache-2.0
// Internal: the backend seam. One Backend per device platform provides memory, op kernels
// (backend/kernels.h), transfers, and collectives over device groups (Communicator). Backends
// register themselves (backend/registry.h); nothing outside a backend's folder includes it.
// docs/design.md ("The backend seam") says how to add one.
//
// Execution model the interface assumes: every device is driven by one host thread at a time
// (exec/executor.h). Kernels, transfers and collectives are called on that thread. A backend
// with streams (CUDA) may return from a kernel or collective once the work is enqueued on the
// device's stream; everything later on the same device is ordered after it, and to_host()
// waits for it. A backend without streams (CPU) completes the work before returning.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/kernels.h"
#include "spmd/device.h"
#include "spmd/dtype.h"

namespace spmd::internal {

class Backend;

// Device memory owned by one Array shard (or several, when shared). Returned to the backend's
// allocator on destruction. A cache line of its own: the devices whose blocks share an input's
// buffer read it for every op, and a neighbour written by another thread (the caller's objects)
// would make each read a miss.
class alignas(64) Buffer {
 public:
  Buffer(Device device, size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const Device& device() const { return device_; }
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 protected:
  // Hands the memory, held by no array, to another device of the same backend whose allocator
  // takes it back (host memory a CPU backend pools per device only to spread its locks).
  void move_to(const Device& device) { device_ = device; }

 private:
  Device device_;
  Backend* backend_;
  size_t bytes_;
  void* data_;
};

// For backends whose device memory is host memory: throws ResourceExhausted when `bytes` exceed
// the host's physical memory, which no allocation can satisfy (with memory overcommit the
// allocation itself might succeed and the process be killed when the pages are touched).
void check_host_memory(const Device& device, size_t bytes);

// The reductions a collective can apply.
enum class ReduceKind { kSum, kMax, kMin };

// How a blocking operation (a collective, a communicator's creation) learns that it must stop:
// the abort token of the call it serves and the calling device's deadline. Backends check
// aborted() while they wait (an atomic load), never wait past deadline(), and once it has passed
// call deadline_passed(), which throws or moves the deadline:
//
//   Cancel::Clock::time_point deadline = cancel.deadline();
//   while (!ready()) {
//     if (cancel.aborted()) cancel.throw_aborted();
//     if (Cancel::Clock::now() >= deadline) {
//       cancel.deadline_passed();
//       deadline = cancel.deadline();
//     } else {
//       sleep_until(deadline);  // woken by abort() and by the other members
//     }
//   }
class Cancel {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Cancel() = default;

  // True once the call has aborted; the call then also aborts every communicator it uses.
  virtual bool aborted() const = 0;
  // When the calling device's current wait must end; set at the first call per collective, and
  // moved only by deadline_passed().
  virtual Clock::time_point deadline() = 0;
  // Throws the error that stands for the call's abort.
  [[noreturn]] virtual void throw_aborted() = 0;
  // For a waiter whose deadline has passed: aborts the call and throws CollectiveTimeout naming
  // the devices that did not arrive, or returns when the deadline moved later (a member of the
  // group had not started its body yet, or started late: the deadline counts from when the last
  // one did), and the waiter waits on until deadline().
  virtual void deadline_passed() = 0;
  // How many device threads the call runs: a hint for how long to spin before sleeping.
  virtual int threads() const = 0;
  // The call's number among this process's calls over meshes that span processes (1, 2, ...;
  // 0 for a call inside one process). SPMD programs issue those calls in the same order in every
  // process, so communicators across processes compare it to catch a process that skipped one.
  virtual uint64_t cross_process_call() const { return 0; }
  // The call's collective timeout, which deadline() counts from; zero when unknown. Communicators
  // across processes compare it with the one their blocking sockets were made with.
  virtual std::chrono::nanoseconds collective_timeout() const { return {}; }
  // What the calling device runs now, for the same comparison: a hash of the collective's
  // signature (op, axes, dtype, shape, parameters) and its description ("psum of f32[4] over
  // 'i'"); 0 and "" when unknown.
  virtual uint64_t collective_hash() const { return 0; }
  virtual std::string describe_collective() { return ""; }
};

// Where the members of one new communicator meet while they create their handles: the first
// member to ask makes the shared state (the CPU backend: its shared-memory exchange), the others
// get the same object. One Rendezvous per communicator instance, shared by the members of this
// process.
class Rendezvous {
 public:
  template <class T>
  std::shared_ptr<T> shared(const std::function<std::shared_ptr<T>()>& make) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!state_) state_ = make();
    return std::static_pointer_cast<T>(state_);
  }

 private:
  std::mutex mu_;
  std::shared_ptr<void> state_;
};

// One rank's handle on a communicator: a group of devices that run collectives together, in the
// order given at creation (rank = position). Modelled on NCCL and c10d:
//   - Every method is collective: all members call it, in the same order, each on its own
//     device's thread; it returns once this member's output is complete (or, with streams,
//     enqueued).
//   - Buffer lifetime: `in` and `out` stay valid until the method returns on this member. A
//     backend whose members read each other's inputs after that (the CPU backend's zero-copy
//     pulls) holds `keep` until no member can read `in` any more. `out` never overlaps any
//     member's `in` (outputs are fresh buffers), so a backend may build results in place.
//   - Waiting honours `cancel`; abort() (from any thread) makes every member that waits, or will
//     wait, in this communicator throw through its Cancel. An aborted communicator is not reused.
//   - Handles are cached and outlive calls (exec/communicator_pool.h): one call uses a
//     communicator at a time, and release() runs between calls.
class Communicator {
 public:
  using Keep = std::shared_ptr<const void>;
  virtual ~Communicator() = default;

  // out = elementwise op over every member's in (count elements of dtype), in rank order.
  virtual void all_reduce(ReduceKind op, DType dtype, int64_t count, const void* in, void* out,
                          const Keep& keep, Cancel& cancel) = 0;
  // Memory a member hands out instead of a copy, where members share memory and arrays are
  // immutable: `owner` keeps it alive (a Keep some member passed), `data` is where the result
  // starts in it. Empty (no owner): this member's `out` holds the result.
  struct Lent {
    Keep owner;
    const void* data = nullptr;
  };
  // all_reduce where one result may serve every member: members that share memory then read one
  // buffer instead of each writing a copy (size - 1 fewer output writes). Every member passes its
  // `out` and `out_keep` (what keeps that buffer alive); the result is in this member's `out` or
  // in the memory lent. The default gives every member its own result.
  // Where lends_shared_results(), this member is lent the result of every non-empty
  // all_reduce_shared and all_gather_shared, so it may pass them a null `out` and an empty
  // `out_keep` (no buffer allocated only to stay unwritten).
  virtual bool lends_shared_results() const { return false; }
  virtual Lent all_reduce_shared(ReduceKind op, DType dtype, int64_t count, const void* in,
                                 void* out, const Keep& out_keep, const Keep& keep,
                                 Cancel& cancel) {
    (void)out_keep;
    all_reduce(op, dtype, count, in, out, keep, cancel);
    return {};
  }
  // in is [outer][size][inner]; out[o][:] = op over q of in_q[o][rank][:] (inner elements).
  virtual void reduce_scatter(ReduceKind op, DType dtype, int64_t outer, int64_t inner,
                              const void* in, void* out, const Keep& keep, Cancel& cancel) = 0;
  // out is [outer][size][row_bytes]; out[o][q] = in_q[o] (in is [outer][row_bytes]).
  virtual void all_gather(int64_t outer, int64_t row_bytes, const void* in, void* out,
                          const Keep& keep, Cancel& cancel) = 0;
  // all_gather where one result may serve every member, as all_reduce_shared. The default gives
  // every member its own result.
  virtual Lent all_gather_shared(int64_t outer, int64_t row_bytes, const void* in, void* out,
                                 const Keep& out_keep, const Keep& keep, Cancel& cancel) {
    (void)out_keep;
    all_gather(outer, row_bytes, in, out, keep, cancel);
    return {};
  }
  // in and out are [size][chunk_bytes]; out[q] = in_q[rank].
  virtual void all_to_all(int64_t chunk_bytes, const void* in, void* out, const Keep& keep,
                          Cancel& cancel) = 0;
  // out = in_src (bytes), or zeros when src < 0. Every member also serves as a source.
  virtual void permute(int src, int64_t bytes, const void* in, void* out, const Keep& keep,
                       Cancel& cancel) = 0;
  // permute where the result may be the source's input itself (lent, kept alive by its `keep`)
  // instead of a copy in `out`. The default copies. Where lends_inputs(), a member with a source
  // gets it lent and may pass a null `out`.
  virtual bool lends_inputs() const { return false; }
  virtual Lent permute_shared(int src, int64_t bytes, const void* in, void* out, const Keep& keep,
                              Cancel& cancel) {
    permute(src, bytes, in, out, keep, cancel);
    return {};
  }
  // Returns once every member has arrived.
  virtual void barrier(Cancel& cancel) = 0;

  // Releases every member waiting in this communicator, now or later (NCCL's ncclCommAbort).
  // Thread-safe; idempotent.
  virtual void abort() = 0;
  // Called on every handle when the call that used the communicator has ended and no member is
  // inside a collective: drop what was kept for that call. Returns false when the communicator
  // cannot serve another call (it was aborted, or its members ran different numbers of
  // collectives), so that the pool destroys it.
  virtual bool release() = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Platform platform() const = 0;
  // How many devices the platform has in this process (0: the platform is absent).
  virtual int device_count() const = 0;
  // Why device_count() is 0 ("cudaGetDeviceCount: cudaErrorNoDevice: no CUDA-capable device is
  // detected"), for the error of a platforms setting that asks for it; "" when nothing is known.
  virtual std::string absent_reason() const { return ""; }
  // How to start the program with `wanted` devices of this platform, for the error of a mesh
  // that asks for more than there are ("spmd::initialize({.cpu_devices = 16}) or
  // SPMD_CPU_DEVICES=16"); "" when there is nothing to say.
  virtual std::string more_devices_advice(int64_t wanted) const {
    (void)wanted;
    return "";
  }

  // Memory for `bytes` bytes on `device`, 64-byte aligned. Never null for bytes > 0. When the
  // memory is not available, throws ResourceExhausted saying why, or std::bad_alloc (which Buffer
  // turns into ResourceExhausted naming the size and the device).
  virtual void* allocate(const Device& device, size_t bytes) = 0;
  virtual void deallocate(const Device& device, void* data, size_t bytes) = 0;
  // Whether kernels running for `reader` may read memory of `owner` directly (zero-copy); both
  // are devices of this backend.
  virtual bool can_alias(const Device& owner, const Device& reader) const = 0;
  // Copies between host memory and device memory.
  virtual void to_host(const Device& device, const void* src, void* host_dst,
                       size_t bytes) const = 0;
  virtual void from_host(const Device& device, const void* host_src, void* dst,
                         size_t bytes) const = 0;
  // dst[i] = src[i] for views of equal shape and dtype, src on `from` and dst on `to` (both this
  // backend's devices; any strides). Used to assemble blocks and shards across devices.
  virtual void copy(const Device& from, const ConstView& src, const Device& to,
                    const MutView& dst) const = 0;

  // The op kernels for work on `device` (a backend with streams returns kernels bound to the
  // device's stream).
  virtual const Kernels& kernels(const Device& device) const = 0;

  // The handle of rank `rank` on a communicator over `members` (ordered devices of this
  // backend). Called once per rank, on that rank's device thread; the ranks of one communicator
  // share `rendezvous`. May wait for the other members (honouring `cancel`).
  virtual std::unique_ptr<Communicator> make_communicator(const std::vector<Device>& members,
                                                          int rank, Rendezvous& rendezvous,
                                                          Cancel& cancel) = 0;
};

}  // namespace spmd::internal
