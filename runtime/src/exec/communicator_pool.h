// SPDX-License-Identifier: Apache-2.0
// Internal: communicators that outlive calls. Creating one can cost milliseconds to seconds on
// some backends (an NCCL init, a Gloo rendezvous), so every communicator is kept, per ordered
// member set, in a process-wide pool, and each call borrows one per group for the whole call:
//   - a call holds its sets exclusively, so two calls that overlap in time on the same devices
//     never share a communicator (one waits in its collective while the other aborts, say);
//   - each rank's handle is created on first use, on that rank's device thread;
//   - when the call ends, the sets go back to the pool; a set whose call aborted, or whose
//     release() says it cannot be reused, is destroyed instead.
// A call borrows the sets of one collective's groups together (MeshGroups), and they go back
// together, with the layout that says which devices form each group: the next call over the same
// devices and axes takes them in one lookup, with nothing to compute or allocate, and the objects
// its device threads read are the same as last time (already in their caches).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "spmd/collectives.h"
#include "spmd/mesh.h"

namespace spmd::internal {

// Which devices form the groups of a collective over some axes (and axis_index_groups).
struct GroupKey {
  std::vector<int> axes;  // mesh axis indices in the caller's order
  AxisIndexGroups groups;
  bool operator==(const GroupKey& o) const = default;
};

struct GroupLayout {
  std::vector<int> group_of;              // mesh position -> group id
  std::vector<int> rank_of;               // mesh position -> rank inside its group
  std::vector<std::vector<int>> members;  // group id -> mesh positions in rank order
};

// The groups of `key` on `mesh`; `key.groups` must already be validated.
GroupLayout make_group_layout(const Mesh& mesh, const GroupKey& key);

// One communicator: the handles of its members.
class CommunicatorSet {
 public:
  explicit CommunicatorSet(std::vector<Device> members);
  ~CommunicatorSet();

  const std::vector<Device>& members() const { return members_; }
  // The handle of rank `rank`, created on first use. Called on the rank's device thread.
  Communicator& handle(int rank, Cancel& cancel);
  // Aborts every handle created so far and every handle created later.
  void abort();
  // Releases every handle (Communicator::release); false if the set cannot be reused.
  bool release();

 private:
  Backend& backend_;
  std::vector<Device> members_;
  Rendezvous rendezvous_;
  std::mutex mu_;  // guards aborted_ and the handles' creation against abort()
  bool aborted_ = false;
  std::vector<std::unique_ptr<Communicator>> handles_;
};

// The groups of one collective over a mesh (the mesh's devices and axis sizes, and the key) and
// a communicator set per group, borrowed together.
struct MeshGroups {
  uint64_t hash;                // of the mesh and key, where the pool keeps them
  std::vector<Device> devices;  // the mesh's, in mesh order
  std::vector<int64_t> axis_sizes;
  GroupKey key;
  GroupLayout layout;
  std::vector<std::unique_ptr<CommunicatorSet>> sets;  // by group id
};

class CommunicatorPool {
 public:
  static CommunicatorPool& instance();

  // The groups of `key` on `mesh` with a set for each, the caller's until it gives them back.
  std::unique_ptr<MeshGroups> acquire(const Mesh& mesh, const GroupKey& key);
  // Takes groups back after their call ended (see give_back of a set).
  void give_back(std::unique_ptr<MeshGroups> groups, bool healthy);

  // A set over `members`, the caller's until it gives it back.
  std::unique_ptr<CommunicatorSet> acquire(const std::vector<Device>& members);
  // Takes a set back after its call ended; keeps it for reuse when `healthy` and it releases.
  void give_back(std::unique_ptr<CommunicatorSet> set, bool healthy);

 private:
  // Idle sets kept at most (a program that maps over ever new device subsets does not grow the
  // pool without bound).
  static constexpr size_t kMaxIdle = 1024;
  using Key = std::vector<std::pair<std::string_view, int>>;
  static Key key_of(const std::vector<Device>& members);

  static uint64_t hash_of(const Mesh& mesh, const GroupKey& key);
  // Keeps a released set for reuse (unless the pool is full). Holds mu_.
  void keep(std::unique_ptr<CommunicatorSet> set);
  // An idle set over `key`'s members, or null. Holds mu_.
  std::unique_ptr<CommunicatorSet> take_idle(const Key& key);
  // The set over `members` of an idle MeshGroups, whose other sets become single idle sets; null
  // if no idle groups hold one. Holds mu_.
  std::unique_ptr<CommunicatorSet> take_from_groups(const std::vector<Device>& members);

  std::mutex mu_;
  std::map<Key, std::vector<std::unique_ptr<CommunicatorSet>>> idle_;
  size_t idle_count_ = 0;
  // Idle groups by hash_of (a hit is compared in full); at most kMaxIdle, past which groups go
  // back as single sets.
  std::unordered_map<uint64_t, std::vector<std::unique_ptr<MeshGroups>>> idle_groups_;
  size_t idle_groups_count_ = 0;
};

}  // namespace spmd::internal
