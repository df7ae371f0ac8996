// SPDX-License-Identifier: Apache-2.0
// Fault handling and the collective protocol of one mapped call (call_context.h).
#include "exec/call_context.h"

#include <fmt/format.h>

#include <algorithm>
#include <typeinfo>
#include <utility>

#include "exec/processes.h"
#include "spmd/errors.h"
#include "spmd/shard_map.h"
#include "vmap_internal.h"

namespace spmd::internal {
namespace {

thread_local DeviceContext* tls_device_context = nullptr;

// What the other devices of an aborted call throw when the abort came from a device error: they
// did nothing wrong, they only have to unwind.
class CallAborted : public Error {
 public:
  using Error::Error;
};

}  // namespace

DeviceContext* current_device_context() { return tls_device_context; }

DeviceScope::DeviceScope(DeviceContext* ctx)
    : previous_(tls_device_context), previous_frame_(swap_vmap_frame(nullptr)) {
  tls_device_context = ctx;
}
DeviceScope::~DeviceScope() {
  tls_device_context = previous_;
  swap_vmap_frame(previous_frame_);
}

CallContext::CallContext(CallSpec spec)
    : spec_(std::move(spec)),
      timeout_(std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(spec_.timeout_s))),
      check_(std::make_unique<InProcessSequenceCheck>(spec_.mesh, spec_.fun_name)),
      bodies_(std::make_unique<Body[]>(spec_.mesh.size())) {
  static std::atomic<uint64_t> cross_process_calls{0};
  for (int r = 0; r < num_devices(); ++r) {
    // Another process's device runs its body there: here it is over before it starts.
    const bool local = is_addressable(spec_.mesh.devices()[r]);
    bodies_[r].phase.store(local ? kQueued : kDone, std::memory_order_relaxed);
    bodies_[r].started_ns.store(-1, std::memory_order_relaxed);
    if (!local && cross_process_call_ == 0) cross_process_call_ = ++cross_process_calls;
  }
}

CallContext::~CallContext() {
  // Every body has returned: what return_communicators left (an aborted call's) goes back to the
  // pool, which destroys it. (The last reference's release orders borrowed_ before this.)
  if (!borrowed_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu_);
  give_back_communicators();
}

void CallContext::return_communicators() {
  // A call without collectives skips the lock: one of two the empty body's dispatch took.
  if (aborted() || !borrowed_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(mu_);
  give_back_communicators();
}

void CallContext::give_back_communicators() {
  CommunicatorPool& pool = CommunicatorPool::instance();
  for (std::unique_ptr<MeshGroups>& groups : groups_) {
    if (groups) pool.give_back(std::move(groups), !aborted());
  }
}

bool CallContext::start(int rank) {
  bodies_[rank].started_ns.store(Clock::now().time_since_epoch().count(),
                                 std::memory_order_relaxed);
  uint8_t queued = kQueued;
  // Fails when the caller's settle() skipped this body: it must not run (the caller may be gone).
  return bodies_[rank].phase.compare_exchange_strong(queued, kRunning, std::memory_order_acq_rel);
}

void CallContext::done(int rank) { bodies_[rank].phase.store(kDone, std::memory_order_release); }

// Sequentially consistent with aborted_ and settle()'s reads: if the caller saw kUser and stopped
// waiting, leave_user_code sees the abort.
void CallContext::enter_user_code(int rank) {
  bodies_[rank].phase.store(kUser, std::memory_order_seq_cst);
}

void CallContext::leave_user_code(int rank, bool check) {
  bodies_[rank].phase.store(kRunning, std::memory_order_seq_cst);
  if (check && aborted_.load(std::memory_order_seq_cst)) throw_aborted();
}

// user_depth: 0 outside the user's function, 1 once call_body called it (its arguments are
// being read from the caller's frame), 2 once begin_user_code marked it as running user code.
void begin_user_code() {
  DeviceContext* ctx = current_device_context();
  if (ctx == nullptr || ctx->user_depth != 1) return;
  ctx->user_depth = 2;
  ctx->call->enter_user_code(ctx->rank);
}

std::vector<Array> call_body(const BodyRef& body_in, const std::vector<Array>& blocks) {
  DeviceContext* ctx = current_device_context();
  // `body_in` lives in the caller's frame, which is gone once the caller stops waiting for a body
  // stuck in user code: copy it before the body marks that (begin_user_code).
  const BodyRef body = body_in;
  if (!body.user_code || ctx->user_depth > 0) return body.call(body.object, blocks);
  ctx->user_depth = 1;
  auto leave = [ctx](bool check) {
    const bool entered = ctx->user_depth == 2;
    ctx->user_depth = 0;
    if (entered) ctx->call->leave_user_code(ctx->rank, check);
  };
  std::vector<Array> outputs;
  try {
    outputs = body.call(body.object, blocks);
  } catch (...) {
    leave(/*check=*/false);
    throw;
  }
  leave(/*check=*/true);
  return outputs;
}

int64_t CallContext::started_ns(int rank) const {
  return bodies_[rank].phase.load(std::memory_order_acquire) == kQueued
             ? -1
             : bodies_[rank].started_ns.load(std::memory_order_relaxed);
}

void CallContext::fail(int rank, std::exception_ptr error) {
  const Device& device = spec_.mesh.devices()[rank];
  std::string message;
  try {
    std::rethrow_exception(error);
  } catch (Error& e) {
    e.set_device(device);
    message = e.what();
  } catch (const ControlFlow&) {
    message = "the call is rerun";
  } catch (const std::exception& e) {
    DeviceError wrapped(
        fmt::format("the body of '{}' raised {}: {}", fun_name(), type_name(typeid(e)), e.what()));
    wrapped.set_device(device);
    message = wrapped.what();
    try {
      std::throw_with_nested(wrapped);
    } catch (...) {
      error = std::current_exception();
    }
  } catch (...) {
    DeviceError wrapped(fmt::format("the body of '{}' raised a non-std::exception", fun_name()));
    wrapped.set_device(device);
    message = wrapped.what();
    error = std::make_exception_ptr(wrapped);
  }
  check_->failed(rank);
  abort(AbortKind::kDeviceError, error, message, device);
}

int64_t CallContext::mesh_position(const Device& device) const {
  const std::vector<Device>& all = spec_.mesh.devices();
  return std::find(all.begin(), all.end(), device) - all.begin();
}

std::exception_ptr CallContext::take_error() {
  // Only abort() records an error, and it marks the call aborted: a call that did not abort
  // skips the lock.
  if (!aborted()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(error_, nullptr);
}

void CallContext::abort(AbortKind kind, std::exception_ptr error, const std::string& message,
                        const Device& device) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abort_kind_ == AbortKind::kNone) {
      first = true;
      abort_kind_ = kind;
      abort_message_ = message;
      abort_device_ = device;
      abort_time_ = Clock::now();
      error_ = std::move(error);
    } else if (kind == AbortKind::kDeviceError && abort_kind_ == AbortKind::kDeviceError &&
               mesh_position(device) < mesh_position(abort_device_)) {
      // Several bodies raised errors of their own (each before it saw the abort): the caller gets
      // the one first in mesh order, not the first in time, so that its text does not depend on
      // which thread ran first.
      abort_message_ = message;
      abort_device_ = device;
      error_ = std::move(error);
    }
    aborted_.store(true, std::memory_order_release);
    for (const std::unique_ptr<MeshGroups>& groups : groups_) {
      if (!groups) continue;
      for (const std::unique_ptr<CommunicatorSet>& set : groups->sets) set->abort();
    }
  }
  if (first && listener_.aborted != nullptr) listener_.aborted(listener_.arg);
}

void CallContext::abort_mismatch(const std::string& message, const Device& device) {
  CollectiveMismatch error(message);
  error.set_device(device);
  abort(AbortKind::kMismatch, std::make_exception_ptr(error), message, device);
  throw_aborted();
}

void CallContext::throw_aborted() {
  if (DeviceContext* ctx = current_device_context()) ctx->threw_abort = true;
  AbortKind kind;
  std::string message;
  Device device;
  {
    std::lock_guard<std::mutex> lock(mu_);
    kind = abort_kind_;
    message = abort_message_;
    device = abort_device_;
  }
  auto with_device = [&](auto error) {
    error.set_device(device);
    return error;
  };
  switch (kind) {
    case AbortKind::kMismatch:
      throw with_device(CollectiveMismatch(message));
    case AbortKind::kTimeout:
      throw with_device(CollectiveTimeout(message));
    case AbortKind::kUnavailable:
      throw DeviceUnavailable(message);
    default:
      throw CallAborted("the mapped call was aborted because " + message);
  }
}

void CallContext::lose(int rank, const std::string& why) {
  uint8_t queued = kQueued;
  bodies_[rank].phase.compare_exchange_strong(queued, kSkipped, std::memory_order_seq_cst);
  const Device& device = spec_.mesh.devices()[rank];
  std::string message =
      fmt::format("{} The call of '{}' waited for {}, which cannot run its body until then.", why,
                  fun_name(), device.str());
  abort(AbortKind::kUnavailable, std::make_exception_ptr(DeviceUnavailable(message)), message,
        device);
}

Settlement CallContext::settle() {
  Settlement s;
  if (!aborted()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  const Clock::time_point grace = abort_time_ + timeout_;
  const bool past_grace = Clock::now() >= grace;
  bool wait = false;
  for (int r = 0; r < num_devices(); ++r) {
    uint8_t phase = bodies_[r].phase.load(std::memory_order_seq_cst);
    // A body that has not started may still start (and see the error) until the grace time;
    // then it never will (its task, when it comes up, does nothing).
    if (phase == kQueued && past_grace &&
        bodies_[r].phase.compare_exchange_strong(phase, kSkipped, std::memory_order_seq_cst)) {
      continue;
    }
    if (phase == kQueued || phase == kRunning) wait = true;  // spmd's code: returns soon
    if (phase != kUser) continue;
    if (past_grace || (!blamed_.empty() && blamed_[r])) {
      s.stuck.push_back(r);
    } else {
      wait = true;
    }
  }
  if (wait) {
    s.until = grace;
    return s;
  }
  static constexpr const char* kKinds[] = {"", "an error in a body", "CollectiveMismatch",
                                           "CollectiveTimeout", "DeviceUnavailable"};
  s.abandon = true;
  s.why = fmt::format("the body of '{}' from a call that failed with {}", fun_name(),
                      kKinds[static_cast<int>(abort_kind_)]);
  return s;
}

Communicator& CallContext::enter(int rank, const OpSignature& sig, const std::vector<int>& axes,
                                 const AxisIndexGroups& groups_given) {
  DeviceContext* ctx = current_device_context();
  uint64_t seq = ++ctx->collectives;
  if (seq == 1 && listener_.waits != nullptr) listener_.waits(listener_.arg);
  ctx->signature_hash = sig.hash();
  std::string mismatch = check_->enter(rank, seq, sig, ctx->signature_hash);
  if (aborted()) throw_aborted();
  if (!mismatch.empty()) abort_mismatch(mismatch, ctx->device);
  for (int i = 0; i < ctx->cached; ++i) {
    const DeviceContext::CachedGroup& c = ctx->cache[i];
    if (c.key->axes == axes && c.key->groups == groups_given) {
      ctx->members = c.members;
      ctx->group_rank = c.rank;
      return *c.comm;
    }
  }
  MeshGroups& g = groups(axes, groups_given);
  int group = g.layout.group_of[rank];
  ctx->members = &g.layout.members[group];
  ctx->group_rank = g.layout.rank_of[rank];
  Communicator& comm = g.sets[group]->handle(ctx->group_rank, *this);
  if (ctx->cached < DeviceContext::kCached) ++ctx->cached;
  ctx->cache[ctx->cached - 1] = {&g.key, ctx->members, ctx->group_rank, &comm};
  return comm;
}

uint64_t CallContext::collective_hash() const { return current_device_context()->signature_hash; }

std::string CallContext::describe_collective() {
  DeviceContext* ctx = current_device_context();
  return check_->describe(ctx->rank, ctx->collectives);
}

void CallContext::leave(int rank) { check_->leave(rank, current_device_context()->collectives); }

void CallContext::finish(int rank) {
  std::string mismatch = check_->finish(rank, current_device_context()->collectives);
  if (!mismatch.empty()) {
    const Device& device = spec_.mesh.devices()[rank];
    CollectiveMismatch error(mismatch);
    error.set_device(device);
    abort(AbortKind::kMismatch, std::make_exception_ptr(error), mismatch, device);
  }
}

MeshGroups& CallContext::groups(const std::vector<int>& axes, const AxisIndexGroups& groups_given) {
  std::lock_guard<std::mutex> lock(mu_);
  borrowed_.store(true, std::memory_order_release);
  for (const std::unique_ptr<MeshGroups>& g : groups_) {
    if (g && g->key.axes == axes && g->key.groups == groups_given) return *g;
  }
  GroupKey key{axes, groups_given};
  check_one_platform(key);
  std::unique_ptr<MeshGroups>& g =
      groups_.emplace_back(CommunicatorPool::instance().acquire(spec_.mesh, key));
  if (aborted()) {
    for (const std::unique_ptr<CommunicatorSet>& set : g->sets) set->abort();
  }
  return *g;
}

void CallContext::check_one_platform(const GroupKey& key) const {
  const std::vector<Device>& all = spec_.mesh.devices();
  auto same = [&](const Device& d) { return d.platform == all[0].platform; };
  if (std::all_of(all.begin(), all.end(), same)) return;
  for (const std::vector<int>& members : make_group_layout(spec_.mesh, key).members) {
    const Device& first = all[members[0]];
    for (int m : members) {
      if (all[m].platform == first.platform) continue;
      throw ValueError(fmt::format(
          "a collective of '{}' runs over {} and {}, devices of two platforms; a collective runs "
          "over the devices of one backend. Build the mesh from one platform's devices "
          "(spmd::devices(\"{}\")).",
          fun_name(), first.str(), all[m].str(), first.platform.name()));
    }
  }
}

Cancel::Clock::time_point CallContext::deadline() {
  DeviceContext* ctx = current_device_context();
  // The deadline counts from the first time this collective has to wait: reading the clock on
  // every collective would cost more than the fast path itself.
  if (ctx->deadline_for != ctx->collectives) {
    ctx->deadline_for = ctx->collectives;
    ctx->deadline = Clock::now() + timeout_;
  }
  return ctx->deadline;
}

void CallContext::deadline_passed() {
  DeviceContext* ctx = current_device_context();
  const Clock::time_point now = Clock::now();
  const uint64_t seq = ctx->collectives;
  std::vector<int> missing;
  if (ctx->members != nullptr) missing = check_->missing(*ctx->members, ctx->rank, seq);
  // A device that has not started this call's body is still running earlier calls: this call
  // waits for its turn, and its deadline counts from when the last member started. Should the
  // device be idle instead (its worker's wake-up lost), the listener wakes it again.
  int64_t last_start = 0;
  for (int m : missing) {
    const int64_t started = started_ns(m);
    if (started < 0) {
      if (listener_.stalled != nullptr) listener_.stalled(listener_.arg);
      ctx->deadline = now + timeout_;
      return;
    }
    last_start = std::max(last_start, started);
  }
  const Clock::time_point from_last_start =
      Clock::time_point(Clock::duration(last_start)) + timeout_;
  if (from_last_start > now) {
    ctx->deadline = from_last_start;
    return;
  }
  throw_timeout(*ctx, missing);
}

void CallContext::throw_timeout(DeviceContext& ctx, const std::vector<int>& missing) {
  const uint64_t seq = ctx.collectives;
  std::string where;
  for (int m : missing) {
    where += fmt::format("{}{} {}", where.empty() ? "" : "; ", spec_.mesh.devices()[m].str(),
                         check_->where_is(m));
  }
  std::string message = fmt::format(
      "{} on {} (collective #{} of the body of '{}') did not complete within {:g} s. Devices that "
      "did not arrive: {}. {} To change the deadline, set SPMD_COLLECTIVE_TIMEOUT_S, "
      "InitOptions::collective_timeout_s or ShardMapOptions::collective_timeout_s.",
      check_->describe(ctx.rank, seq), ctx.device.str(), seq, fun_name(), spec_.timeout_s,
      where.empty() ? "none" : where, kSpmdRule);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (abort_kind_ == AbortKind::kNone) {
      // Members that wait in another collective unwind at once; those in user code are stuck.
      blamed_.assign(num_devices(), 0);
      for (int m : missing) blamed_[m] = check_->in_user_code(m) ? 1 : 0;
    }
  }
  CollectiveTimeout error(message);
  error.set_device(ctx.device);
  abort(AbortKind::kTimeout, std::make_exception_ptr(error), message, ctx.device);
  throw_aborted();
}

}  // namespace spmd::internal
