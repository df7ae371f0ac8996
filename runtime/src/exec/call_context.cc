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

CallContext::CallContext(const CallSpec& spec)
    : spec_(spec),
      timeout_(std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(spec_.timeout_s))),
      check_(std::make_unique<InProcessSequenceCheck>(spec_.mesh, spec_.fun_name)) {}

CallContext::~CallContext() {
  // Every body has returned: the borrowed communicators go back to the pool (or are destroyed if
  // the call aborted).
  CommunicatorPool& pool = CommunicatorPool::instance();
  for (auto& [key, groups] : groups_) {
    for (std::unique_ptr<CommunicatorSet>& set : groups->sets) {
      if (set) pool.give_back(std::move(set), !aborted());
    }
  }
}

void CallContext::fail(int rank, std::exception_ptr error) {
  const Device& device = spec_.mesh.devices()[rank];
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
        fmt::format("the body of '{}' raised {}: {}", fun_name(), typeid(e).name(), e.what()));
    wrapped.set_device(device.id, device.str());
    message = wrapped.what();
    try {
      std::throw_with_nested(wrapped);
    } catch (...) {
      error = std::current_exception();
    }
  } catch (...) {
    DeviceError wrapped(fmt::format("the body of '{}' raised a non-std::exception", fun_name()));
    wrapped.set_device(device.id, device.str());
    message = wrapped.what();
    error = std::make_exception_ptr(wrapped);
  }
  check_->failed(rank);
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
    for (const std::unique_ptr<CommunicatorSet>& set : groups->sets) {
      if (set) set->abort();
    }
  }
}

void CallContext::abort_mismatch(const std::string& message) {
  abort(AbortKind::kMismatch, std::make_exception_ptr(CollectiveMismatch(message)), message);
  throw_aborted();
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

Communicator& CallContext::enter(int rank, const OpSignature& sig, const std::vector<int>& axes,
                                 const AxisIndexGroups& groups_given) {
  DeviceContext* ctx = current_device_context();
  uint64_t seq = ++ctx->collectives;
  std::string mismatch = check_->enter(rank, seq, sig);
  if (aborted()) throw_aborted();
  if (!mismatch.empty()) abort_mismatch(mismatch);
  for (const DeviceContext::CachedGroup& c : ctx->cache) {
    if (c.key.axes == axes && c.key.groups == groups_given) {
      ctx->members = c.members;
      ctx->group_rank = c.rank;
      return *c.comm;
    }
  }
  GroupKey key{axes, groups_given};
  Groups& g = groups(key);
  int group = g.layout.group_of[rank];
  ctx->members = &g.layout.members[group];
  ctx->group_rank = g.layout.rank_of[rank];
  Communicator& comm = g.sets[group]->handle(ctx->group_rank, *this);
  ctx->cache.push_back({std::move(key), ctx->members, ctx->group_rank, &comm});
  return comm;
}

void CallContext::leave(int rank) { check_->leave(rank, current_device_context()->collectives); }

void CallContext::finish(int rank) {
  std::string mismatch = check_->finish(rank, current_device_context()->collectives);
  if (!mismatch.empty()) {
    abort(AbortKind::kMismatch, std::make_exception_ptr(CollectiveMismatch(mismatch)), mismatch);
  }
}

CallContext::Groups& CallContext::groups(const GroupKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  std::unique_ptr<Groups>& slot = groups_[key];
  if (!slot) {
    slot = std::make_unique<Groups>();
    slot->layout = make_group_layout(spec_.mesh, key);
    for (const std::vector<int>& members : slot->layout.members) {
      std::vector<Device> devices;
      for (int m : members) devices.push_back(spec_.mesh.devices()[m]);
      slot->sets.push_back(CommunicatorPool::instance().acquire(devices));
      if (aborted()) slot->sets.back()->abort();
    }
  }
  return *slot;
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

void CallContext::throw_timeout() {
  DeviceContext* ctx = current_device_context();
  const uint64_t seq = ctx->collectives;
  std::string missing;
  if (ctx->members != nullptr) missing = check_->missing(*ctx->members, ctx->rank, seq);
  std::string message = fmt::format(
      "{} on {} (collective #{} of the body of '{}') did not complete within {:g} s. Devices that "
      "did not arrive: {}. {} To change the deadline, set SPMD_COLLECTIVE_TIMEOUT_S, "
      "InitOptions::collective_timeout_s or ShardMapOptions::collective_timeout_s.",
      check_->describe(ctx->rank, seq), ctx->device.str(), seq, fun_name(), spec_.timeout_s,
      missing.empty() ? "none" : missing, kSpmdRule);
  abort(AbortKind::kTimeout, std::make_exception_ptr(CollectiveTimeout(message)), message);
  throw_aborted();
}

}  // namespace spmd::internal
