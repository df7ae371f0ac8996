// Internal: the shared state of one mapped call (one shard_map or pmap invocation) and the
// per-device state of each body thread.
//
// Fault model (docs/design.md, "Faults"): a device that throws aborts the call; every device
// blocked in a collective is woken (the call aborts the communicators it borrowed) and unwinds;
// the caller gets the first error with the device that raised it. Before a device blocks in a
// collective, the call's SequenceCheck compares it with the other devices, so that a device that
// runs a different collective, or returned from the body early, is reported at once; a device
// that never arrives is reported at the collective deadline.
#pragma once

#include <atomic>
#include <chrono>
#include <exception>
#include <map>
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

namespace spmd::internal {

// Base of internal exceptions that steer a mapped call instead of reporting an error (for example
// the discovery of a nested pmap axis). CallContext::fail hands them to the caller unchanged. Not
// derived from std::exception, so that user code catching std::exception does not swallow them.
struct ControlFlow {};

// Which devices form the groups of a collective over some axes (and axis_index_groups).
struct GroupKey {
  std::vector<int> axes;  // mesh axis indices in the caller's order
  AxisIndexGroups groups;
  bool operator<(const GroupKey& o) const {
    return axes != o.axes ? axes < o.axes : groups < o.groups;
  }
  bool operator==(const GroupKey& o) const = default;
};

struct GroupLayout {
  std::vector<int> group_of;              // mesh position -> group id
  std::vector<int> rank_of;               // mesh position -> rank inside its group
  std::vector<std::vector<int>> members;  // group id -> mesh positions in rank order
};

// The groups of `key` on `mesh`; `key.groups` must already be validated.
GroupLayout make_group_layout(const Mesh& mesh, const GroupKey& key);

// What a mapped call is: its mesh, what its bodies may do, and how it reports.
struct CallSpec {
  Mesh mesh;
  uint64_t manual_mask = 0;  // mesh axes the bodies may name in collectives
  bool check_vma = false;    // track varying manual axes (shard_map's check_vma)
  double timeout_s = 300;    // collective deadline
  std::string fun_name;      // the body's name in messages
};

class CallContext final : public Cancel {
 public:
  // `spec` must outlive the call (it lives in the launching frame; copying its mesh and name on
  // every call would cost more than an empty call's launch).
  explicit CallContext(const CallSpec& spec);
  ~CallContext() override;

  const Mesh& mesh() const { return spec_.mesh; }
  int num_devices() const { return static_cast<int>(spec_.mesh.size()); }
  uint64_t manual_mask() const { return spec_.manual_mask; }
  bool check_vma() const { return spec_.check_vma; }
  const std::string& fun_name() const { return spec_.fun_name; }

  // ---- faults ----
  // A device body raised `error`: record it (first error wins) with the device, abort the call.
  void fail(int rank, std::exception_ptr error);
  // The error the caller rethrows, or null.
  std::exception_ptr error() const;

  // ---- the collective protocol, called on device threads ----
  // Device `rank` enters its next collective, over mesh axes `axes` split into `groups`: checks
  // the other devices (CollectiveMismatch when they disagree) and returns its communicator.
  Communicator& enter(int rank, const OpSignature& sig, const std::vector<int>& axes,
                      const AxisIndexGroups& groups);
  void leave(int rank);
  // The body of device `rank` returned normally.
  void finish(int rank);

  // ---- Cancel ----
  bool aborted() const override { return aborted_.load(std::memory_order_acquire); }
  Clock::time_point deadline() override;
  [[noreturn]] void throw_aborted() override;
  [[noreturn]] void throw_timeout() override;
  int threads() const override { return num_devices() + 1; }

 private:
  enum class AbortKind { kNone, kDeviceError, kMismatch, kTimeout };
  // The communicator sets of one GroupKey (one per group), borrowed from the pool.
  struct Groups {
    GroupLayout layout;
    std::vector<std::unique_ptr<CommunicatorSet>> sets;
  };

  void abort(AbortKind kind, std::exception_ptr error, const std::string& message);
  [[noreturn]] void abort_mismatch(const std::string& message);
  Groups& groups(const GroupKey& key);

  const CallSpec& spec_;
  std::chrono::nanoseconds timeout_;
  std::unique_ptr<SequenceCheck> check_;

  std::atomic<bool> aborted_{false};
  mutable std::mutex mu_;  // guards everything below
  AbortKind abort_kind_ = AbortKind::kNone;
  std::string abort_message_;
  std::exception_ptr error_;
  std::map<GroupKey, std::unique_ptr<Groups>> groups_;
};

// The state of the device body running on this thread.
struct DeviceContext {
  CallContext* call = nullptr;
  int rank = 0;  // linear position in the mesh
  Device device;
  std::vector<int64_t> coords;  // mesh coordinates
  uint64_t collectives = 0;     // collectives entered so far
  bool threw_abort = false;     // this thread already unwinds because the call aborted
  const std::vector<int>* members = nullptr;  // mesh positions of the current collective's group
  int group_rank = 0;                         // this device's rank in that group
  uint64_t bound = 0;                         // mesh axes collectives may name here
  int pmap_depth = 0;                         // pmap levels whose bodies run here
  uint64_t deadline_for = 0;                  // the collective `deadline` belongs to
  Cancel::Clock::time_point deadline;
  // Communicators already looked up by this device (avoids the call's mutex on every collective).
  struct CachedGroup {
    GroupKey key;
    const std::vector<int>* members;
    int rank;
    Communicator* comm;
  };
  std::vector<CachedGroup> cache;
};

// The context of the body running on this thread, or null outside mapped bodies.
DeviceContext* current_device_context();

// Installs `ctx` as this thread's context for its lifetime.
class DeviceScope {
 public:
  explicit DeviceScope(DeviceContext* ctx);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  DeviceContext* previous_;
};

}  // namespace spmd::internal
