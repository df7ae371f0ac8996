// SPDX-License-Identifier: Apache-2.0
// The in-process collective sequence check (sequence_check.h).
#include "exec/sequence_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <utility>

#include "exec/processes.h"

namespace spmd::internal {

const char* const kSpmdRule =
    "Every device must run the same collectives in the same order, with the same dtypes, shapes "
    "and axes (SPMD). Look for a collective under device-dependent control flow, for example a "
    "branch on axis_index or on data.";

namespace {

// Free status arrays by device count, shared by every call of the process; bounded, so that a
// burst of concurrent calls does not pin memory for ever.
template <class Status>
struct StatusPool {
  static constexpr size_t kMaxFree = 64;
  std::mutex mu;
  std::vector<std::pair<size_t, std::unique_ptr<Status[]>>> free;

  static StatusPool& instance() {
    static StatusPool* pool = new StatusPool();  // never destroyed: calls may run during exit
    return *pool;
  }
};

}  // namespace

namespace {

// Takes a `count` array out of `free`, or null.
template <class Status>
std::unique_ptr<Status[]> take_from(std::vector<std::pair<size_t, std::unique_ptr<Status[]>>>& free,
                                    size_t count) {
  for (auto it = free.rbegin(); it != free.rend(); ++it) {
    if (it->first != count) continue;
    std::unique_ptr<Status[]> statuses = std::move(it->second);
    free.erase(std::next(it).base());
    return statuses;
  }
  return nullptr;
}

// Arrays this thread gave back, reused without the pool's lock: a thread that runs calls one
// after the other (the usual caller) takes and gives back its own, two locks fewer per call.
template <class Status>
std::vector<std::pair<size_t, std::unique_ptr<Status[]>>>& thread_cache() {
  thread_local std::vector<std::pair<size_t, std::unique_ptr<Status[]>>> cache;
  return cache;
}
constexpr size_t kThreadCached = 4;

}  // namespace

std::unique_ptr<InProcessSequenceCheck::Status[]> InProcessSequenceCheck::take_statuses(
    size_t count) {
  std::unique_ptr<Status[]> statuses = take_from(thread_cache<Status>(), count);
  if (!statuses) {
    StatusPool<Status>& pool = StatusPool<Status>::instance();
    std::lock_guard<std::mutex> lock(pool.mu);
    statuses = take_from(pool.free, count);
  }
  if (!statuses) return std::make_unique<Status[]>(count);
  for (size_t i = 0; i < count; ++i) statuses[i].word.store(0, std::memory_order_relaxed);
  return statuses;
}

void InProcessSequenceCheck::give_back_statuses(size_t count, std::unique_ptr<Status[]> statuses) {
  auto& cache = thread_cache<Status>();
  if (cache.size() < kThreadCached) {
    cache.emplace_back(count, std::move(statuses));
    return;
  }
  StatusPool<Status>& pool = StatusPool<Status>::instance();
  std::lock_guard<std::mutex> lock(pool.mu);
  if (pool.free.size() < StatusPool<Status>::kMaxFree) {
    pool.free.emplace_back(count, std::move(statuses));
  }
}

InProcessSequenceCheck::InProcessSequenceCheck(const Mesh& mesh, const std::string& fun_name)
    : mesh_(mesh), fun_name_(fun_name), status_(take_statuses(mesh.size())), count_(mesh.size()) {}

InProcessSequenceCheck::~InProcessSequenceCheck() {
  give_back_statuses(count_, std::move(status_));
}

std::string InProcessSequenceCheck::device_name(int rank) const {
  return mesh_.devices()[rank].str();
}

void InProcessSequenceCheck::publish(int rank, uint64_t seq, State state) {
  status_[rank].word.store(seq << 2 | state, std::memory_order_seq_cst);
}

OpSignature InProcessSequenceCheck::signature_at(int rank, uint64_t seq) {
  std::lock_guard<std::mutex> lock(status_[rank].mu);
  return status_[rank].sigs[seq % kHistory];
}

std::string InProcessSequenceCheck::describe(int rank, uint64_t seq) {
  return signature_at(rank, seq).describe(mesh_);
}

std::string InProcessSequenceCheck::where_is(int rank) {
  const Device& device = mesh_.devices()[rank];
  if (!is_addressable(device)) {
    return fmt::format("runs in process {} (the cross-process exchange names where it is)",
                       device.process_index);
  }
  uint64_t w = status_[rank].word.load(std::memory_order_seq_cst);
  uint64_t seq = w >> 2;
  switch (static_cast<State>(w & 3)) {
    case kFinished:
      return fmt::format("returned from the body after {} collectives", seq);
    case kFailed:
      return "raised an exception";
    case kInCollective:
      return fmt::format("waits in collective #{} ({})", seq, describe(rank, seq));
    case kRunning:
      break;
  }
  if (seq == 0) return "is running user code before its first collective";
  return fmt::format("is running user code after collective #{} ({})", seq, describe(rank, seq));
}

std::string InProcessSequenceCheck::enter(int rank, uint64_t seq, const OpSignature& sig,
                                          uint64_t hash) {
  Status& st = status_[rank];
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.sigs[seq % kHistory] = sig;
  }
  st.hashes[seq % kHistory].store(hash, std::memory_order_relaxed);
  publish(rank, seq, kInCollective);

  auto in_window = [&](uint64_t other) { return other >= seq && other - seq < kHistory - 2; };
  for (int e = 0; e < static_cast<int>(count_); ++e) {
    if (e == rank) continue;
    uint64_t w = status_[e].word.load(std::memory_order_seq_cst);
    uint64_t se = w >> 2;
    State state = static_cast<State>(w & 3);
    if (state == kFinished && se < seq) {
      return fmt::format(
          "{} returned from the body of '{}' after {} collectives while {} entered collective #{} "
          "({}), which can never complete. {}",
          device_name(e), fun_name_, se, device_name(rank), seq, describe(rank, seq), kSpmdRule);
    }
    if (state == kFailed || !in_window(se)) continue;
    uint64_t other = status_[e].hashes[seq % kHistory].load(std::memory_order_acquire);
    if (!in_window(status_[e].word.load(std::memory_order_seq_cst) >> 2) || other == hash) {
      continue;
    }
    // Name the two devices in mesh order: which of them noticed first depends on timing, and the
    // message must not.
    const int lo = std::min(rank, e), hi = std::max(rank, e);
    std::string first = describe(lo, seq);
    std::string second = describe(hi, seq);
    if (first == second) second += " with different parameters (axis, tiled, groups or perm)";
    return fmt::format(
        "devices of the call of '{}' ran different collectives at collective #{}: {} ran {}, {} "
        "ran {}. {}",
        fun_name_, seq, device_name(lo), first, device_name(hi), second, kSpmdRule);
  }
  return "";
}

void InProcessSequenceCheck::leave(int rank, uint64_t seq) { publish(rank, seq, kRunning); }

std::string InProcessSequenceCheck::finish(int rank, uint64_t seq) {
  publish(rank, seq, kFinished);
  for (int e = 0; e < static_cast<int>(count_); ++e) {
    uint64_t w = status_[e].word.load(std::memory_order_seq_cst);
    State state = static_cast<State>(w & 3);
    if (e == rank || (w >> 2) <= seq || state == kFailed) continue;
    return fmt::format(
        "{} returned from the body of '{}' after {} collectives while {} {}; the devices ran "
        "different numbers of collectives. {}",
        device_name(rank), fun_name_, seq, device_name(e), where_is(e), kSpmdRule);
  }
  return "";
}

bool InProcessSequenceCheck::in_user_code(int rank) {
  return (status_[rank].word.load(std::memory_order_seq_cst) & 3) == kRunning;
}

void InProcessSequenceCheck::failed(int rank) {
  uint64_t seq = status_[rank].word.load(std::memory_order_relaxed) >> 2;
  publish(rank, seq, kFailed);
}

std::vector<int> InProcessSequenceCheck::missing(const std::vector<int>& members, int rank,
                                                 uint64_t seq) {
  std::vector<int> out;
  for (int e : members) {
    uint64_t w = status_[e].word.load(std::memory_order_seq_cst);
    if (e != rank && (w >> 2) < seq) out.push_back(e);
  }
  return out;
}

}  // namespace spmd::internal
