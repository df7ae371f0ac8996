// SPDX-License-Identifier: Apache-2.0
// Internal: the shared state of one mapped call (one shard_map or pmap invocation) and the
// per-device state of each body thread.
//
// Fault model (docs/design.md, "Faults"): a device that throws aborts the call; every device
// blocked in a collective is woken (the call aborts the communicators it borrowed) and unwinds;
// the caller gets the first error with the device that raised it. Before a device blocks in a
// collective, the call's SequenceCheck compares it with the other devices, so that a device that
// runs a different collective, or returned from the body early, is reported at once; a device
// that never arrives is reported at the collective deadline, which counts from when every member
// of the collective's group has started its body (a device may first finish earlier calls).
//
// The call lives on the heap (exec/launch.cc) so that its caller may stop waiting for a body that
// does not return after the call failed: settle() says when; that body's device is then
// quarantined by the executor until the body returns.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "exec/communicator_pool.h"
#include "exec/op_signature.h"
#include "exec/sequence_check.h"
#include "spmd/collectives.h"
#include "spmd/mesh.h"
#include "spmd/shard_map.h"

namespace spmd::internal {

// Base of internal exceptions that steer a mapped call instead of reporting an error (for example
// the discovery of a nested pmap axis). CallContext::fail hands them to the caller unchanged. Not
// derived from std::exception, so that user code catching std::exception does not swallow them.
struct ControlFlow {};

// What a mapped call is: its mesh, what its bodies may do, and how it reports.
struct CallSpec {
  Mesh mesh;
  uint64_t manual_mask = 0;     // mesh axes the bodies may name in collectives
  bool check_vma = false;       // track varying manual axes (shard_map's check_vma)
  double timeout_s = 300;       // collective deadline
  std::string fun_name;         // the body's name in messages
  bool discovers_nest = false;  // inner pmap levels may discover axes (spmd::PmapNest runs it)
  // What runs, the same for every call of one mapped function (its body's code), so that the
  // executor can learn how long its bodies take (Executor::run); null: unknown.
  const void* site = nullptr;
};

struct DeviceContext;

// What the waiting caller of an aborted call does (settle()).
struct Settlement {
  bool abandon = false;  // stop waiting; the bodies at `stuck` still run user code
  std::vector<int> stuck;
  std::string why;  // what those bodies are, for the quarantine message
  std::chrono::steady_clock::time_point until = std::chrono::steady_clock::time_point::max();
};

class CallContext final : public Cancel {
 public:
  explicit CallContext(CallSpec spec);
  ~CallContext() override;
  CallContext(const CallContext&) = delete;
  CallContext& operator=(const CallContext&) = delete;

  const Mesh& mesh() const { return spec_.mesh; }
  int num_devices() const { return static_cast<int>(spec_.mesh.size()); }
  uint64_t manual_mask() const { return spec_.manual_mask; }
  bool check_vma() const { return spec_.check_vma; }
  const std::string& fun_name() const { return spec_.fun_name; }
  bool discovers_nest() const { return spec_.discovers_nest; }

  // ---- the bodies' lifecycle, on device threads ----
  // The body of device `rank` starts. False when it must not run: the call aborted before it
  // started (its caller may already have returned).
  bool start(int rank);
  // The body of device `rank` returned normally (it may still be wrong: CollectiveMismatch).
  void finish(int rank);
  // A device body raised `error`: record it (first error wins) with the device, abort the call.
  void fail(int rank, std::exception_ptr error);
  // The body of device `rank` is over (after finish or fail, or an abort it unwound from).
  void done(int rank);
  // Device `rank` enters and leaves the user's function (see call_body). Leaving with `check`
  // throws the call's abort if it aborted meanwhile: the caller may have stopped waiting.
  void enter_user_code(int rank);
  void leave_user_code(int rank, bool check);

  // ---- faults, for the caller ----
  // The error the caller rethrows, or null; moved out, so that the caller holds the exception's
  // only reference (a body's thread may drop the launch last, and must not destroy the exception
  // object the caller is reading).
  std::exception_ptr take_error();
  // After a call every body of which returned: its communicators go back to the pool now, on the
  // caller's thread. Left to the destructor, they would go back when the launch's last reference
  // drops, possibly on a worker thread after the caller's next call took new ones: processes
  // would then pair different cross-process communicators (their identity counts them) and wait
  // on each other until the deadline. An aborted call keeps them for the destructor.
  void return_communicators();
  // What the launch path hears of the call, on device threads: `aborted(arg)` once when the call
  // aborts (on the aborting thread); `waits(arg)` when a body enters its first collective, about
  // to wait on the other bodies (they must all be running); `stalled(arg)` when a body has waited
  // a whole deadline for a body that has not started (its device may be busy with earlier calls,
  // or its wake-up was lost: the launch path wakes the workers again).
  struct Listener {
    void (*aborted)(void*) = nullptr;
    void (*waits)(void*) = nullptr;
    void (*stalled)(void*) = nullptr;
    void* arg = nullptr;
  };
  void set_listener(const Listener& listener) { listener_ = listener; }
  // After an abort: whether the caller may stop waiting. Every body gets until the abort plus the
  // deadline to start and return (a body that has not started by then never does), except those
  // a timeout named as not arriving, which had theirs; the caller stops waiting once only bodies
  // past their time remain, stuck in user code.
  Settlement settle();
  // Device `rank` cannot run its body (`why`: it was quarantined while the call waited for it).
  void lose(int rank, const std::string& why);

  // ---- the collective protocol, called on device threads ----
  // Device `rank` enters its next collective, over mesh axes `axes` split into `groups`: checks
  // the other devices (CollectiveMismatch when they disagree) and returns its communicator.
  Communicator& enter(int rank, const OpSignature& sig, const std::vector<int>& axes,
                      const AxisIndexGroups& groups);
  void leave(int rank);

  // ---- Cancel ----
  bool aborted() const override { return aborted_.load(std::memory_order_acquire); }
  Clock::time_point deadline() override;
  [[noreturn]] void throw_aborted() override;
  void deadline_passed() override;
  int threads() const override { return num_devices() + 1; }
  uint64_t cross_process_call() const override { return cross_process_call_; }
  std::chrono::nanoseconds collective_timeout() const override { return timeout_; }
  uint64_t collective_hash() const override;
  std::string describe_collective() override;

 private:
  enum class AbortKind { kNone, kDeviceError, kMismatch, kTimeout, kUnavailable };
  // kRunning: spmd's own code (finite; never abandoned); kUser: the user's function.
  enum Phase : uint8_t { kQueued, kRunning, kUser, kDone, kSkipped };
  // Records the first abort (its kind, error, message and the device it is attributed to) and
  // aborts every communicator. A device error of a device earlier in the mesh replaces a recorded
  // device error.
  void abort(AbortKind kind, std::exception_ptr error, const std::string& message,
             const Device& device);
  int64_t mesh_position(const Device& device) const;
  [[noreturn]] void abort_mismatch(const std::string& message, const Device& device);
  [[noreturn]] void throw_timeout(DeviceContext& ctx, const std::vector<int>& missing);
  // The groups of a collective over `axes` split into `groups_given`, borrowed from the pool on
  // the call's first use.
  MeshGroups& groups(const std::vector<int>& axes, const AxisIndexGroups& groups_given);
  // ValueError when a group of `key` holds devices of two platforms.
  void check_one_platform(const GroupKey& key) const;
  // Hands every communicator set still held to the pool (healthy unless the call aborted). Holds
  // mu_.
  void give_back_communicators();
  // When the body of `rank` started (steady clock, ns), or -1 while it has not.
  int64_t started_ns(int rank) const;

  CallSpec spec_;
  std::chrono::nanoseconds timeout_;
  std::unique_ptr<SequenceCheck> check_;
  uint64_t cross_process_call_ = 0;
  struct Body {
    std::atomic<uint8_t> phase;       // Phase
    std::atomic<int64_t> started_ns;  // when the body started (steady clock), -1 before
  };
  std::unique_ptr<Body[]> bodies_;  // by mesh position (one allocation per call)
  Listener listener_;

  std::atomic<bool> aborted_{false};
  std::atomic<bool> borrowed_{false};  // groups_ may hold communicators (set under mu_)
  mutable std::mutex mu_;              // guards everything below
  AbortKind abort_kind_ = AbortKind::kNone;
  std::string abort_message_;
  Device abort_device_;
  Clock::time_point abort_time_;
  std::exception_ptr error_;
  std::vector<char> blamed_;                         // the devices a timeout named as not arriving
  std::vector<std::unique_ptr<MeshGroups>> groups_;  // null once given back
};

// The state of the device body running on this thread.
struct DeviceContext {
  CallContext* call = nullptr;
  int rank = 0;  // linear position in the mesh
  Device device;
  uint64_t collectives = 0;     // collectives entered so far
  uint64_t signature_hash = 0;  // of the collective entered last
  // This device's body already unwinds because the call aborted. Atomic: the batch elements of a
  // vmap with an axis name share the device's context and may unwind on their own threads.
  std::atomic<bool> threw_abort{false};
  const std::vector<int>* members = nullptr;  // mesh positions of the current collective's group
  int group_rank = 0;                         // this device's rank in that group
  uint64_t bound = 0;                         // mesh axes collectives may name here
  bool track_vma = false;     // record the varying manual axes of values (some check_vma is on)
  int pmap_depth = 0;         // pmap levels whose bodies run here
  int user_depth = 0;         // 0, 1 body called, 2 in user code (call_body)
  uint64_t deadline_for = 0;  // the collective `deadline` belongs to
  Cancel::Clock::time_point deadline;
  // Communicators already looked up by this device (avoids the call's mutex on every collective):
  // the first kCached kinds of groups, then the latest in the last slot.
  struct CachedGroup {
    const GroupKey* key;  // in the call's MeshGroups
    const std::vector<int>* members;
    int rank;
    Communicator* comm;
  };
  static constexpr int kCached = 4;
  CachedGroup cache[kCached];
  int cached = 0;
};

// The context of the body running on this thread, or null outside mapped bodies.
DeviceContext* current_device_context();

// Calls `body` with `blocks` on this device's thread. The outermost call of the user's function
// marks it as user code: only there may the call's caller stop waiting for this body (settle()),
// so spmd's code around it never runs after its caller has returned; after it, an aborted call
// throws instead of returning into that code.
std::vector<Array> call_body(const BodyRef& body, const std::vector<Array>& blocks);

class VmapFrame;

// Installs `ctx` as this thread's context for its lifetime. A vmap batch element this thread ran
// is hidden meanwhile: a body does not run inside the vmap that launched its call.
class DeviceScope {
 public:
  explicit DeviceScope(DeviceContext* ctx);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  DeviceContext* previous_;
  VmapFrame* previous_frame_;
};

}  // namespace spmd::internal
