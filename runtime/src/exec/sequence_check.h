// SPDX-License-Identifier: Apache-2.0
// Internal: the check that the devices of one mapped call run the same collectives in the same
// order (SPMD), made before a device blocks, so that a device running a different collective, or
// the same one on a different dtype, shape, axes or parameters, or one that returned from the
// body early, is reported at once instead of hanging or exchanging garbage.
//
// Devices compare signatures (exec/op_signature.h) by collective number. In one process the
// devices publish status words in shared memory (InProcessSequenceCheck); a check across processes
// exchanges the same sequence hashes through the store (c10d's habit) behind this interface.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "exec/op_signature.h"
#include "spmd/mesh.h"

namespace spmd::internal {

class SequenceCheck {
 public:
  virtual ~SequenceCheck() = default;
  // Device `rank` (mesh position) enters its collective number `seq` (from 1). Returns why the
  // call cannot go on (a device ran something else as collective `seq`, or returned from the body
  // before it), or "". `hash` is sig.hash(), which the caller has computed already.
  virtual std::string enter(int rank, uint64_t seq, const OpSignature& sig, uint64_t hash) = 0;
  // Device `rank` completed collective `seq` and runs user code again.
  virtual void leave(int rank, uint64_t seq) = 0;
  // Device `rank` returned from the body after `seq` collectives. Returns why that is wrong (a
  // device already ran more), or "".
  virtual std::string finish(int rank, uint64_t seq) = 0;
  // Device `rank` raised an exception.
  virtual void failed(int rank) = 0;
  // What device `rank` ran as collective `seq`: "psum of f32[4] over 'i'".
  virtual std::string describe(int rank, uint64_t seq) = 0;
  // The devices among `members` (mesh positions), other than `rank`, that have not reached
  // collective `seq`.
  virtual std::vector<int> missing(const std::vector<int>& members, int rank, uint64_t seq) = 0;
  // Where device `rank` is: "is running user code after collective #2 (psum of f32[4] over 'i')".
  virtual std::string where_is(int rank) = 0;
  // True while device `rank` runs user code (it is not in a collective, finished or failed).
  virtual bool in_user_code(int rank) = 0;
};

// The rule every mismatch message ends with.
extern const char* const kSpmdRule;

// Devices of one process publish a status word (collective count + state) and a short history of
// signature hashes; every device reads the others' before it blocks.
class InProcessSequenceCheck final : public SequenceCheck {
 public:
  InProcessSequenceCheck(const Mesh& mesh, const std::string& fun_name);
  ~InProcessSequenceCheck() override;

  std::string enter(int rank, uint64_t seq, const OpSignature& sig, uint64_t hash) override;
  void leave(int rank, uint64_t seq) override;
  std::string finish(int rank, uint64_t seq) override;
  void failed(int rank) override;
  std::string describe(int rank, uint64_t seq) override;
  std::vector<int> missing(const std::vector<int>& members, int rank, uint64_t seq) override;
  std::string where_is(int rank) override;
  bool in_user_code(int rank) override;

 private:
  enum State : uint64_t { kRunning = 0, kInCollective = 1, kFinished = 2, kFailed = 3 };
  // Signatures older than this are not compared: a device more than kHistory - 2 collectives
  // ahead of another (possible only between independent groups) is caught by the timeout.
  static constexpr int kHistory = 16;
  struct alignas(64) Status {
    std::atomic<uint64_t> word{0};  // collectives entered << 2 | State
    std::atomic<uint64_t> hashes[kHistory] = {};
    std::mutex mu;  // guards sigs (read only to build messages)
    OpSignature sigs[kHistory];
  };

  void publish(int rank, uint64_t seq, State state);
  OpSignature signature_at(int rank, uint64_t seq);
  std::string device_name(int rank) const;

  // Status arrays are reused across calls (statuses_pool in the .cc): allocating and
  // zeroing some 2.5 KB per device, 64-byte aligned, was a fifth of an empty call's cost. Only
  // the status words need a reset: a device reads another's hash or signature only for a
  // collective that device has entered in this call.
  static std::unique_ptr<Status[]> take_statuses(size_t count);
  static void give_back_statuses(size_t count, std::unique_ptr<Status[]> statuses);

  const Mesh& mesh_;
  const std::string& fun_name_;
  std::unique_ptr<Status[]> status_;
  size_t count_;
};

}  // namespace spmd::internal
