// Internal: what a Communicator needs from the mapped call it serves: a way to wait that honours
// the call's abort flag and the collective deadline.
#pragma once

#include <cstdint>

#include "exec/futex.h"

namespace spmd::internal {

class Communicator;

class SyncContext {
 public:
  // Bit 0 of every communicator wait word: set when the call aborts. Generations count in 2s.
  static constexpr uint32_t kAbortBit = 1;

  virtual ~SyncContext() = default;

  // Blocks while w.word == old (spinning first when cores allow) and returns the new value.
  // Throws the call's error when the abort bit is or becomes set, and CollectiveTimeout (after
  // aborting the call) when the calling device's collective deadline passes.
  virtual uint32_t wait_while_equal(WaitWord& w, uint32_t old) = 0;
  // How waiters of this call spin and yield before sleeping.
  virtual const WaitPolicy& policy() const = 0;
  // Throws the exception that stands for the call's abort (for a waiter that finds the abort bit
  // already set before it waits).
  [[noreturn]] virtual void throw_aborted() = 0;
};

}  // namespace spmd::internal
