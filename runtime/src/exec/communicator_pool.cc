// SPDX-License-Identifier: Apache-2.0
// The communicator pool (communicator_pool.h).
#include "exec/communicator_pool.h"

#include "backend/registry.h"
#include "exec/processes.h"

namespace spmd::internal {

CommunicatorSet::CommunicatorSet(std::vector<Device> members)
    : backend_(backend_for(members[0])), members_(std::move(members)), handles_(members_.size()) {}

CommunicatorSet::~CommunicatorSet() = default;

Communicator& CommunicatorSet::handle(int rank, Cancel& cancel) {
  // Only this rank's thread creates its handle; the lock orders it against abort().
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (handles_[rank]) return *handles_[rank];
  }
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
    auto it = idle_.find(key_of(members));
    if (it != idle_.end() && !it->second.empty()) {
      std::unique_ptr<CommunicatorSet> set = std::move(it->second.back());
      it->second.pop_back();
      --idle_count_;
      return set;
    }
  }
  return std::make_unique<CommunicatorSet>(members);
}

void CommunicatorPool::give_back(std::unique_ptr<CommunicatorSet> set, bool healthy) {
  if (!healthy) {
    set->abort();
    return;
  }
  if (!set->release()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_count_ >= kMaxIdle) return;
  idle_[key_of(set->members())].push_back(std::move(set));
  ++idle_count_;
}

}  // namespace spmd::internal
