// SPDX-License-Identifier: Apache-2.0
// Internal: what the collectives (collectives.cc) need from a vmap with an axis name. Each batch
// element runs on its own thread with a VmapFrame: a collective over the batch axis meets the
// other elements through the frame's communicator; one over other axes first takes the frame's
// turn, so that the elements run those one at a time, in batch order.
#pragma once

#include <string>
#include <vector>

#include "backend/backend.h"
#include "exec/op_signature.h"

namespace spmd::internal {

class VmapGroup;

// One batch element of a vmap with an axis name. Its Cancel serves the element's collectives
// over the batch axis.
class VmapFrame final : public Cancel {
 public:
  VmapFrame(VmapGroup* group, int index, VmapFrame* parent)
      : group_(group), index_(index), parent_(parent) {}

  const std::string& axis_name() const;
  int size() const;
  int index() const { return index_; }
  // The frame of the enclosing vmap's element this one runs for, or null.
  VmapFrame* parent() const { return parent_; }

  // This element enters its next collective over the batch axis: checks it against the other
  // elements (CollectiveMismatch) and returns its communicator handle.
  Communicator& enter(const OpSignature& sig);
  // Waits until this element may run its next operation over other axes (batch order: the k-th
  // such operation of element b runs after the k-th of elements 0..b-1), and ends it.
  void take_turn();
  void end_turn();

  // ---- Cancel ----
  bool aborted() const override;
  Clock::time_point deadline() override { return deadline_; }
  [[noreturn]] void throw_aborted() override;
  void deadline_passed() override;
  int threads() const override { return size() + 1; }
  std::string describe_collective() override { return what_; }

 private:
  VmapGroup* group_;
  int index_;
  VmapFrame* parent_;
  Clock::time_point deadline_;
  std::string what_;  // the collective entered last ("psum of f32[3] over 'b'")
};

// The frame of the batch element running on this thread, or null.
VmapFrame* current_vmap_frame();
// Makes `frame` this thread's and returns the previous one.
VmapFrame* swap_vmap_frame(VmapFrame* frame);

// The turns an operation over other axes holds in the enclosing vmaps (released on destruction,
// innermost last).
class VmapTurns {
 public:
  VmapTurns() = default;
  ~VmapTurns();
  VmapTurns(VmapTurns&& other) noexcept : frames_(std::move(other.frames_)) {}
  VmapTurns& operator=(VmapTurns&&) = delete;

  void take(VmapFrame* frame);

 private:
  std::vector<VmapFrame*> frames_;
};

}  // namespace spmd::internal
