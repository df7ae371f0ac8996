// Fault handling and the collective protocol of one mapped call (call_context.h).
#include "exec/call_context.h"

#include <fmt/format.h>

#include <typeinfo>

#include "spmd/errors.h"

namespace spmd::internal {
namespace {

thread_local DeviceContext* tls_device_context = nullptr;

// What the other devices of an aborted call throw when the abort came from a device error: they
// did nothing wrong, they only have to unwind.
class CallAborted : public Error {
 public:
  using Error::Error;
};

constexpr const char* kSpmdRule =
    "Every device must run the same collectives in the same order, with the same dtypes, shapes "
    "and axes (SPMD). Look for a collective under device-dependent control flow, for example a "
    "branch on axis_index or on data.";

int64_t mixed_radix(const Mesh& mesh, const std::vector<int64_t>& coords,
                    const std::vector<int>& axes) {
  int64_t index = 0;
  for (int a : axes) index = index * mesh.axis_sizes()[a] + coords[a];
  return index;
}

}  // namespace

DeviceContext* current_device_context() { return tls_device_context; }

DeviceScope::DeviceScope(DeviceContext* ctx) : previous_(tls_device_context) {
  tls_device_context = ctx;
}
DeviceScope::~DeviceScope() { tls_device_context = previous_; }

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

CallContext::CallContext(Mesh mesh, uint64_t manual_mask, bool check_vma, double timeout_s,
                         std::string fun_name)
    : mesh_(std::move(mesh)),
      manual_mask_(manual_mask),
      check_vma_(check_vma),
      timeout_(std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(timeout_s))),
      fun_name_(std::move(fun_name)),
      policy_(wait_policy(static_cast<int>(mesh_.size()) + 1)),
      status_(mesh_.size()) {}

CallContext::~CallContext() = default;

std::string CallContext::device_name(int rank) const { return mesh_.devices()[rank].str(); }

void CallContext::publish(int rank, uint64_t seq, State state) {
  status_[rank].word.store(seq << 2 | state, std::memory_order_seq_cst);
}

void CallContext::fail(int rank, std::exception_ptr error) {
  const Device& device = mesh_.devices()[rank];
  std::string message;
  try {
    std::rethrow_exception(error);
  } catch (Error& e) {
    e.set_device(device.id, device.str());
    message = e.what();
  } catch (const ControlFlow&) {
    message = "the call is rerun";
  } catch (const std::exception& e) {
    DeviceError wrapped(
        fmt::format("the body of '{}' raised {}: {}", fun_name_, typeid(e).name(), e.what()));
    wrapped.set_device(device.id, device.str());
    message = wrapped.what();
    try {
      std::throw_with_nested(wrapped);
    } catch (...) {
      error = std::current_exception();
    }
  } catch (...) {
    DeviceError wrapped(fmt::format("the body of '{}' raised a non-std::exception", fun_name_));
    wrapped.set_device(device.id, device.str());
    message = wrapped.what();
    error = std::make_exception_ptr(wrapped);
  }
  uint64_t seq = status_[rank].word.load(std::memory_order_relaxed) >> 2;
  publish(rank, seq, kFailed);
  abort(AbortKind::kDeviceError, error, message);
}

std::exception_ptr CallContext::error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return error_;
}

void CallContext::abort(AbortKind kind, std::exception_ptr error, const std::string& message) {
  std::lock_guard<std::mutex> lock(mu_);
  if (abort_kind_ == AbortKind::kNone) {
    abort_kind_ = kind;
    abort_message_ = message;
    error_ = std::move(error);
  }
  aborted_.store(true, std::memory_order_release);
  for (auto& [key, groups] : groups_) {
    for (auto& comm : groups->communicators) comm->wake_for_abort();
  }
}

void CallContext::throw_aborted() {
  if (DeviceContext* ctx = current_device_context()) ctx->threw_abort = true;
  AbortKind kind;
  std::string message;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kind = abort_kind_;
    message = abort_message_;
  }
  switch (kind) {
    case AbortKind::kMismatch:
      throw CollectiveMismatch(message);
    case AbortKind::kTimeout:
      throw CollectiveTimeout(message);
    default:
      throw CallAborted("the mapped call was aborted because " + message);
  }
}

OpSignature CallContext::signature_at(int rank, uint64_t seq) {
  std::lock_guard<std::mutex> lock(status_[rank].mu);
  return status_[rank].sigs[seq % kHistory];
}

std::string CallContext::where_is(int rank) {
  uint64_t w = status_[rank].word.load(std::memory_order_seq_cst);
  uint64_t seq = w >> 2;
  auto what = [&] { return signature_at(rank, seq).describe(mesh_); };
  switch (static_cast<State>(w & 3)) {
    case kFinished:
      return fmt::format("returned from the body after {} collectives", seq);
    case kFailed:
      return "raised an exception";
    case kInCollective:
      return fmt::format("waits in collective #{} ({})", seq, what());
    case kRunning:
      break;
  }
  if (seq == 0) return "is running user code before its first collective";
  return fmt::format("is running user code after collective #{} ({})", seq, what());
}

void CallContext::enter(int rank, const OpSignature& sig) {
  DeviceContext* ctx = current_device_context();
  uint64_t seq = ++ctx->collectives;
  uint64_t hash = sig.hash();
  Status& st = status_[rank];
  {
    std::lock_guard<std::mutex> lock(st.mu);
    st.sigs[seq % kHistory] = sig;
  }
  st.hashes[seq % kHistory].store(hash, std::memory_order_relaxed);
  publish(rank, seq, kInCollective);
  if (aborted()) throw_aborted();
  check_peers(rank, seq, hash);
}

void CallContext::check_peers(int rank, uint64_t seq, uint64_t hash) {
  auto in_window = [&](uint64_t other) { return other >= seq && other - seq < kHistory - 2; };
  for (int e = 0; e < num_devices(); ++e) {
    if (e == rank) continue;
    uint64_t w = status_[e].word.load(std::memory_order_seq_cst);
    uint64_t se = w >> 2;
    State state = static_cast<State>(w & 3);
    std::string message;
    if (state == kFinished && se < seq) {
      message = fmt::format(
          "{} returned from the body of '{}' after {} collectives while {} entered collective #{} "
          "({}), which can never complete. {}",
          device_name(e), fun_name_, se, device_name(rank), seq,
          signature_at(rank, seq).describe(mesh_), kSpmdRule);
    } else if (state != kFailed && in_window(se)) {
      uint64_t other = status_[e].hashes[seq % kHistory].load(std::memory_order_acquire);
      if (!in_window(status_[e].word.load(std::memory_order_seq_cst) >> 2) || other == hash) {
        continue;
      }
      std::string mine = signature_at(rank, seq).describe(mesh_);
      std::string theirs = signature_at(e, seq).describe(mesh_);
      if (mine == theirs) theirs += " with different parameters (axis, tiled, groups or perm)";
      message = fmt::format(
          "devices of the call of '{}' ran different collectives at collective #{}: {} ran {}, "
          "{} ran {}. {}",
          fun_name_, seq, device_name(rank), mine, device_name(e), theirs, kSpmdRule);
    } else {
      continue;
    }
    abort(AbortKind::kMismatch, std::make_exception_ptr(CollectiveMismatch(message)), message);
    throw_aborted();
  }
}

void CallContext::leave(int rank) {
  publish(rank, current_device_context()->collectives, kRunning);
}

void CallContext::finish(int rank) {
  uint64_t seq = current_device_context()->collectives;
  publish(rank, seq, kFinished);
  for (int e = 0; e < num_devices(); ++e) {
    uint64_t w = status_[e].word.load(std::memory_order_seq_cst);
    State state = static_cast<State>(w & 3);
    if (e == rank || (w >> 2) <= seq || state == kFailed) continue;
    std::string message = fmt::format(
        "{} returned from the body of '{}' after {} collectives while {} {}; the devices ran "
        "different numbers of collectives. {}",
        device_name(rank), fun_name_, seq, device_name(e), where_is(e), kSpmdRule);
    abort(AbortKind::kMismatch, std::make_exception_ptr(CollectiveMismatch(message)), message);
    return;
  }
}

CallContext::Groups& CallContext::groups(const GroupKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Groups>& slot = groups_[key];
  if (!slot) {
    slot = std::make_unique<Groups>();
    slot->layout = make_group_layout(mesh_, key);
    for (const std::vector<int>& members : slot->layout.members) {
      Backend& backend = backend_for(mesh_.devices()[members[0]]);
      slot->communicators.push_back(
          backend.make_communicator(static_cast<int>(members.size()), *this));
      if (aborted()) slot->communicators.back()->wake_for_abort();
    }
  }
  return *slot;
}

uint32_t CallContext::wait_while_equal(WaitWord& w, uint32_t old) {
  uint32_t v = old;
  auto changed = [&] { return (v = w.word.load(std::memory_order_acquire)) != old; };
  if (!spin_then_yield(policy_, changed)) {
    DeviceContext* ctx = current_device_context();
    // The deadline counts from the first time this collective has to sleep: reading the clock on
    // every collective would cost more than the fast path itself.
    if (ctx->deadline_for != ctx->collectives) {
      ctx->deadline_for = ctx->collectives;
      ctx->deadline = std::chrono::steady_clock::now() + timeout_;
    }
    while ((v = w.word.load(std::memory_order_acquire)) == old) {
      auto left = ctx->deadline - std::chrono::steady_clock::now();
      if (left.count() <= 0) timeout(ctx->rank);
      w.sleep(old, left);
    }
  }
  if (v & kAbortBit) throw_aborted();
  return v;
}

void CallContext::timeout(int rank) {
  DeviceContext* ctx = current_device_context();
  uint64_t seq = ctx->collectives;
  std::string missing;
  if (ctx->members != nullptr) {
    for (int e : *ctx->members) {
      uint64_t w = status_[e].word.load(std::memory_order_seq_cst);
      if (e == rank || (w >> 2) >= seq) continue;
      missing += fmt::format("{}{} {}", missing.empty() ? "" : "; ", device_name(e), where_is(e));
    }
  }
  std::string message = fmt::format(
      "{} on {} (collective #{} of the body of '{}') did not complete within {:g} s. Devices that "
      "did not arrive: {}. {} To change the deadline, set SPMD_COLLECTIVE_TIMEOUT_S, "
      "InitOptions::collective_timeout_s or ShardMapOptions::collective_timeout_s.",
      signature_at(rank, seq).describe(mesh_), device_name(rank), seq, fun_name_,
      std::chrono::duration<double>(timeout_).count(), missing.empty() ? "none" : missing,
      kSpmdRule);
  abort(AbortKind::kTimeout, std::make_exception_ptr(CollectiveTimeout(message)), message);
  throw_aborted();
}

}  // namespace spmd::internal
