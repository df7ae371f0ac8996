// SPDX-License-Identifier: Apache-2.0
// The communicator pool (communicator_pool.h).
#include "exec/communicator_pool.h"

#include <algorithm>

#include "backend/registry.h"
#include "exec/op_signature.h"
#include "exec/processes.h"

namespace spmd::internal {
namespace {

int64_t mixed_radix(const Mesh& mesh, const std::vector<int64_t>& coords,
                    const std::vector<int>& axes) {
  int64_t index = 0;
  for (int a : axes) index = index * mesh.axis_sizes()[a] + coords[a];
  return index;
}

}  // namespace

GroupLayout make_group_layout(const Mesh& mesh, const GroupKey& key) {
  std::vector<int> others;
  for (int a = 0; a < mesh.ndim(); ++a) {
    bool named = false;
    for (int k : key.axes) named = named || k == a;
    if (!named) others.push_back(a);
  }
  int64_t group_size = 1;
  for (int a : key.axes) group_size *= mesh.axis_sizes()[a];
  int64_t slices = mesh.size() / group_size;

  const int64_t subgroups = key.groups.empty() ? 1 : static_cast<int64_t>(key.groups.size());
  std::vector<int> sub_of(group_size, 0), rank_in_sub(group_size, 0);
  for (int64_t g = 0; g < static_cast<int64_t>(key.groups.size()); ++g) {
    for (size_t r = 0; r < key.groups[g].size(); ++r) {
      sub_of[key.groups[g][r]] = static_cast<int>(g);
      rank_in_sub[key.groups[g][r]] = static_cast<int>(r);
    }
  }
  if (key.groups.empty()) {
    for (int64_t p = 0; p < group_size; ++p) rank_in_sub[p] = static_cast<int>(p);
  }

  GroupLayout layout;
  layout.group_of.resize(mesh.size());
  layout.rank_of.resize(mesh.size());
  layout.members.resize(slices * subgroups);
  for (int64_t g = 0; g < slices * subgroups; ++g) {
    size_t size = key.groups.empty() ? group_size : key.groups[g % subgroups].size();
    layout.members[g].resize(size);
  }
  for (int64_t d = 0; d < mesh.size(); ++d) {
    std::vector<int64_t> c = mesh.coords(d);
    int64_t pos = mixed_radix(mesh, c, key.axes);
    int64_t group = mixed_radix(mesh, c, others) * subgroups + sub_of[pos];
    layout.group_of[d] = static_cast<int>(group);
    layout.rank_of[d] = rank_in_sub[pos];
    layout.members[group][rank_in_sub[pos]] = static_cast<int>(d);
  }
  return layout;
}

CommunicatorSet::CommunicatorSet(std::vector<Device> members)
    : backend_(backend_for(members[0])), members_(std::move(members)), handles_(members_.size()) {}

CommunicatorSet::~CommunicatorSet() = default;

Communicator& CommunicatorSet::handle(int rank, Cancel& cancel) {
  // Only this rank's thread writes its slot (the lock orders that against abort()), so it reads
  // the slot without the lock: the lock's line stays on the core of the rank that took it last.
  if (handles_[rank]) return *handles_[rank];
  // A group over several processes' devices is served by the cross-process communicators
  // (runtime/src/distributed/), which use the backend's shared-memory path inside each process.
  bool spans_processes = false;
  for (const Device& d : members_) spans_processes = spans_processes || !is_addressable(d);
  std::unique_ptr<Communicator> made =
      spans_processes ? cross_process_factory()(members_, rank, rendezvous_, cancel)
                      : backend_.make_communicator(members_, rank, rendezvous_, cancel);
  std::lock_guard<std::mutex> lock(mu_);
  if (aborted_) made->abort();
  handles_[rank] = std::move(made);
  return *handles_[rank];
}

void CommunicatorSet::abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  for (const std::unique_ptr<Communicator>& h : handles_) {
    if (h) h->abort();
  }
}

bool CommunicatorSet::release() {
  std::lock_guard<std::mutex> lock(mu_);
  bool reusable = !aborted_;
  for (const std::unique_ptr<Communicator>& h : handles_) {
    if (h) reusable = h->release() && reusable;
  }
  return reusable;
}

CommunicatorPool& CommunicatorPool::instance() {
  // Never destroyed: communicators may hold backend resources that outlive static destruction.
  static CommunicatorPool* pool = new CommunicatorPool();
  return *pool;
}

CommunicatorPool::Key CommunicatorPool::key_of(const std::vector<Device>& members) {
  Key key;
  key.reserve(members.size());
  for (const Device& d : members) key.emplace_back(d.platform.name(), d.id);
  return key;
}

std::unique_ptr<CommunicatorSet> CommunicatorPool::acquire(const std::vector<Device>& members) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const Key key = key_of(members);
    if (std::unique_ptr<CommunicatorSet> set = take_idle(key)) return set;
    // Idle groups hold their sets: rather than make a second communicator over these devices,
    // take theirs (those groups fall apart into single sets, rebuilt as groups when next used).
    if (std::unique_ptr<CommunicatorSet> set = take_from_groups(members)) return set;
  }
  return std::make_unique<CommunicatorSet>(members);
}

std::unique_ptr<CommunicatorSet> CommunicatorPool::take_idle(const Key& key) {
  auto it = idle_.find(key);
  if (it == idle_.end() || it->second.empty()) return nullptr;
  std::unique_ptr<CommunicatorSet> set = std::move(it->second.back());
  it->second.pop_back();
  --idle_count_;
  return set;
}

std::unique_ptr<CommunicatorSet> CommunicatorPool::take_from_groups(
    const std::vector<Device>& members) {
  auto over_members = [&](const std::unique_ptr<CommunicatorSet>& s) {
    return s->members() == members;
  };
  for (auto it = idle_groups_.begin(); it != idle_groups_.end(); ++it) {
    std::vector<std::unique_ptr<MeshGroups>>& idle = it->second;
    for (auto g = idle.begin(); g != idle.end(); ++g) {
      std::vector<std::unique_ptr<CommunicatorSet>>& sets = (*g)->sets;
      auto found = std::find_if(sets.begin(), sets.end(), over_members);
      if (found == sets.end()) continue;
      std::unique_ptr<CommunicatorSet> set = std::move(*found);
      for (std::unique_ptr<CommunicatorSet>& other : sets) {
        if (other) keep(std::move(other));
      }
      idle.erase(g);
      if (idle.empty()) idle_groups_.erase(it);
      --idle_groups_count_;
      return set;
    }
  }
  return nullptr;
}

void CommunicatorPool::give_back(std::unique_ptr<CommunicatorSet> set, bool healthy) {
  if (!healthy) {
    set->abort();
    return;
  }
  if (!set->release()) return;
  std::lock_guard<std::mutex> lock(mu_);
  keep(std::move(set));
}

void CommunicatorPool::keep(std::unique_ptr<CommunicatorSet> set) {
  if (idle_count_ >= kMaxIdle) return;
  idle_[key_of(set->members())].push_back(std::move(set));
  ++idle_count_;
}

uint64_t CommunicatorPool::hash_of(const Mesh& mesh, const GroupKey& key) {
  uint64_t h = 0;
  for (const Device& d : mesh.devices()) {
    h = hash_combine(h, std::hash<std::string_view>()(d.platform.name()));
    h = hash_combine(h, static_cast<uint64_t>(d.id));
  }
  for (int64_t size : mesh.axis_sizes()) h = hash_combine(h, static_cast<uint64_t>(size));
  for (int a : key.axes) h = hash_combine(h, static_cast<uint64_t>(a));
  for (const std::vector<int>& group : key.groups) {
    h = hash_combine(h, group.size());
    for (int m : group) h = hash_combine(h, static_cast<uint64_t>(m));
  }
  return h;
}

std::unique_ptr<MeshGroups> CommunicatorPool::acquire(const Mesh& mesh, const GroupKey& key) {
  const uint64_t h = hash_of(mesh, key);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = idle_groups_.find(h);
    if (it != idle_groups_.end()) {
      std::vector<std::unique_ptr<MeshGroups>>& idle = it->second;
      for (auto g = idle.rbegin(); g != idle.rend(); ++g) {
        if ((*g)->devices != mesh.devices() || (*g)->axis_sizes != mesh.axis_sizes() ||
            (*g)->key != key) {
          continue;
        }
        std::unique_ptr<MeshGroups> found = std::move(*g);
        idle.erase(std::next(g).base());
        if (idle.empty()) idle_groups_.erase(it);
        --idle_groups_count_;
        return found;
      }
    }
  }
  auto made = std::make_unique<MeshGroups>(
      MeshGroups{h, mesh.devices(), mesh.axis_sizes(), key, make_group_layout(mesh, key), {}});
  for (const std::vector<int>& members : made->layout.members) {
    std::vector<Device> devices;
    devices.reserve(members.size());
    for (int m : members) devices.push_back(mesh.devices()[m]);
    made->sets.push_back(acquire(devices));
  }
  return made;
}

void CommunicatorPool::give_back(std::unique_ptr<MeshGroups> groups, bool healthy) {
  bool whole = true;
  for (std::unique_ptr<CommunicatorSet>& set : groups->sets) {
    if (!healthy) {
      set->abort();
      whole = false;
    } else if (!set->release()) {
      set.reset();
      whole = false;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (whole && idle_groups_count_ < kMaxIdle) {
    idle_groups_[groups->hash].push_back(std::move(groups));
    ++idle_groups_count_;
    return;
  }
  // Kept apart, the sets that still work serve other groups over the same devices.
  for (std::unique_ptr<CommunicatorSet>& set : groups->sets) {
    if (set && healthy) keep(std::move(set));
  }
}

}  // namespace spmd::internal
