// SPDX-License-Identifier: Apache-2.0
// Internal: communicators that outlive calls. Creating one can cost milliseconds to seconds on
// some backends (an NCCL init, a Gloo rendezvous), so every communicator is kept, per ordered
// member set, in a process-wide pool, and each call borrows one per group for the whole call:
//   - a call holds its sets exclusively, so two calls that overlap in time on the same devices
//     never share a communicator (one waits in its collective while the other aborts, say);
//   - each rank's handle is created on first use, on that rank's device thread;
//   - when the call ends, the sets go back to the pool; a set whose call aborted, or whose
//     release() says it cannot be reused, is destroyed instead.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/backend.h"

namespace spmd::internal {

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

class CommunicatorPool {
 public:
  static CommunicatorPool& instance();

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

  std::mutex mu_;
  std::map<Key, std::vector<std::unique_ptr<CommunicatorSet>>> idle_;
  size_t idle_count_ = 0;
};

}  // namespace spmd::internal
