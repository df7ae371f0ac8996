// SPDX-License-Identifier: Apache-2.0
// Internal: communicators over groups whose devices sit in nodes that a backend's own
// communicators cannot span as they are. The case: the CUDA backend's logical devices
// (SPMD_CUDA_DEVICES_PER_GPU > 1), where NCCL takes one rank per GPU, so a group with several
// members on one GPU and members on other GPUs has no single communicator. A backend builds such
// a group from the two it has (make_hierarchical_communicator):
//   - `local`, among the members of one node (for CUDA, device copies within a GPU);
//   - `leaders`, among the first member of each node, its leader (for CUDA, NCCL).
// Every collective becomes a gather of the members' inputs:
//   1. local all_gather: every member of a node holds the node's inputs;
//   2. leaders all_gather (all_to_all for all_to_all): each leader trades its node's inputs for
//      the other nodes' (only the blocks they read, for all_to_all);
//   3. local permute from the leader: the node's other members get what the leader assembled;
// and each member then makes its output with its own kernels. Reductions fold the members'
// inputs one by one in rank order with the CPU backend's rules (float16/bfloat16 accumulate in
// float32 and round once), so results equal the CPU backend's bit for bit, unlike NCCL's own
// reductions. The price is bandwidth: an all-reduce moves every member's input to every member
// (a ring all-reduce moves about twice one input), and a permute gathers every input. These
// groups are the uncommon case (a mesh axis usually lies within one node or across nodes one
// member each, which backends serve directly), and exact results were chosen over speed.
//
// The sub-communicators must not read an input after their call returns (the CUDA backend's
// communicators order such reads on the device's stream; the test backend's copy them): the
// leader passes its output buffer as an input in step 3, which no Keep holds.
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"

namespace spmd::internal {

// Which node holds each member of a group, by rank.
class NodeLayout {
 public:
  // node_of[rank]: an id of the node that holds that member (any ints; equal means same node).
  explicit NodeLayout(const std::vector<int>& node_of);

  int size() const { return static_cast<int>(node_.size()); }
  int nodes() const { return static_cast<int>(ranks_.size()); }
  // The member's node, numbered 0, 1, ... in the order of each node's lowest rank.
  int node(int rank) const { return node_[rank]; }
  // The member's position among its node's members (0: the leader).
  int local_rank(int rank) const { return local_rank_[rank]; }
  // A node's members, ascending.
  const std::vector<int>& ranks(int node) const { return ranks_[node]; }
  // The most members on one node.
  int widest() const { return widest_; }
  // Whether the group needs make_hierarchical_communicator: it spans several nodes and has
  // several members on one of them.
  bool mixed() const { return nodes() > 1 && nodes() < size(); }

 private:
  std::vector<int> node_;
  std::vector<int> local_rank_;
  std::vector<std::vector<int>> ranks_;
  int widest_ = 0;
};

// The handle of `rank` on a communicator over `members`, laid out in nodes as `layout` says
// (layout.mixed()). Makes this member's local communicator (over its node's members) and, for a
// leader, the leaders' one, through backend.make_communicator with rendezvous of their own.
std::unique_ptr<Communicator> make_hierarchical_communicator(Backend& backend,
                                                             const std::vector<Device>& members,
                                                             const NodeLayout& layout, int rank,
                                                             Rendezvous& rendezvous,
                                                             Cancel& cancel);

}  // namespace spmd::internal
