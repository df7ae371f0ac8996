// Internal: the shared state of one mapped call (one shard_map or pmap invocation) and the
// per-device state of each body thread.
//
// Fault model (design.md §2): a device that throws aborts the call; every device blocked in a
// collective is woken and unwinds; the caller gets the first error with the device that raised it.
// Devices publish a status word (collective count + state) and a short history of signature hashes,
// so that every collective can check, before it blocks, that no other device ran a different
// collective at the same position of its program or already returned from the body.
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
#include "exec/op_signature.h"
#include "exec/sync_context.h"
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

class CallContext final : public SyncContext {
 public:
  CallContext(Mesh mesh, uint64_t manual_mask, bool check_vma, double timeout_s,
              std::string fun_name);
  ~CallContext() override;

  const Mesh& mesh() const { return mesh_; }
  int num_devices() const { return static_cast<int>(status_.size()); }
  uint64_t manual_mask() const { return manual_mask_; }
  bool check_vma() const { return check_vma_; }
  const std::string& fun_name() const { return fun_name_; }

  // ---- faults ----
  // A device body raised `error`: record it (first error wins) with the device, abort the call.
  void fail(int rank, std::exception_ptr error);
  // The error the caller rethrows, or null.
  std::exception_ptr error() const;
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // Throws, on a device thread, the exception that stands for the call's abort.
  [[noreturn]] void throw_aborted() override;

  // ---- the collective protocol, called on device threads ----
  // Publishes that device `rank` enters its next collective and checks the other devices; throws
  // CollectiveMismatch when they disagree.
  void enter(int rank, const OpSignature& sig);
  void leave(int rank);
  // The body of device `rank` returned normally.
  void finish(int rank);

  // The communicator of group `group` for `key`, and the layout of `key` (created on first use).
  struct Groups {
    GroupLayout layout;
    std::vector<std::unique_ptr<Communicator>> communicators;
  };
  Groups& groups(const GroupKey& key);

  // ---- SyncContext ----
  uint32_t wait_while_equal(WaitWord& w, uint32_t old) override;
  const WaitPolicy& policy() const override { return policy_; }

 private:
  enum State : uint64_t { kRunning = 0, kInCollective = 1, kFinished = 2, kFailed = 3 };
  static constexpr int kHistory = 16;
  struct alignas(64) Status {
    std::atomic<uint64_t> word{0};  // collectives entered << 2 | State
    std::atomic<uint64_t> hashes[kHistory] = {};
    std::mutex mu;  // guards sigs (read only to build messages)
    OpSignature sigs[kHistory];
  };
  enum class AbortKind { kNone, kDeviceError, kMismatch, kTimeout };

  void abort(AbortKind kind, std::exception_ptr error, const std::string& message);
  void publish(int rank, uint64_t seq, State state);
  OpSignature signature_at(int rank, uint64_t seq);
  std::string where_is(int rank);
  std::string device_name(int rank) const;
  [[noreturn]] void timeout(int rank);
  void check_peers(int rank, uint64_t seq, uint64_t hash);

  Mesh mesh_;
  uint64_t manual_mask_;
  bool check_vma_;
  std::chrono::nanoseconds timeout_;
  std::string fun_name_;
  WaitPolicy policy_;
  std::vector<Status> status_;

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
  uint64_t bound = 0;                         // mesh axes collectives may name here
  int pmap_depth = 0;                         // pmap levels whose bodies run here
  uint64_t deadline_for = 0;                  // the collective `deadline` belongs to
  std::chrono::steady_clock::time_point deadline;
  // Groups already looked up by this device (avoids the call's mutex on every collective).
  struct CachedGroups {
    GroupKey key;
    CallContext::Groups* groups;
  };
  std::vector<CachedGroups> cache;
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
