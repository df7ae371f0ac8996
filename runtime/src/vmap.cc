// SPDX-License-Identifier: Apache-2.0
// vmap (spmd/vmap.h): argument checks with JAX's messages, the batch loop, the batch threads of a
// vmap with an axis name (VmapGroup: their communicator, turns and fault handling), output
// stacking, and the batching rule for a vmapped shard_map.
#include "spmd/vmap.h"

#include <fmt/format.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "array_impl.h"
#include "exec/call_context.h"
#include "exec/communicator_pool.h"
#include "mesh_context_internal.h"
#include "spmd/device.h"
#include "spmd/errors.h"
#include "spmd/mesh_context.h"
#include "spmd/ops.h"
#include "vmap_internal.h"

namespace spmd::internal {
namespace {

thread_local VmapFrame* tls_frame = nullptr;

// Installs a frame as this thread's for the scope.
class FrameScope {
 public:
  explicit FrameScope(VmapFrame* frame) : previous_(swap_vmap_frame(frame)) {}
  ~FrameScope() { swap_vmap_frame(previous_); }
  FrameScope(const FrameScope&) = delete;
  FrameScope& operator=(const FrameScope&) = delete;

 private:
  VmapFrame* previous_;
};

// Stands for "another batch element failed" on the elements it stops; never leaves run_vmap.
struct VmapAbort {};

// Host threads for batch elements, kept between calls: starting a thread costs tens of µs, as
// much as a small element's work. A task never waits for a thread: one starts when none is idle
// (a batch element may itself run a vmap with an axis name and wait for its elements). The pool
// is never destroyed (idle threads wait until the process exits).
class BatchThreads {
 public:
  static BatchThreads& instance() {
    static BatchThreads* pool = new BatchThreads();
    return *pool;
  }

  void run(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
    if (idle_ < tasks_.size()) {
      try {
        std::thread([this] { work(); }).detach();
      } catch (...) {
        tasks_.pop_back();  // it refers to its caller's frame: never run it later
        throw;
      }
    } else {
      cv_.notify_one();
    }
  }

 private:
  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      while (tasks_.empty()) {
        ++idle_;
        cv_.wait(lock);
        --idle_;
      }
      std::function<void()> task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  size_t idle_ = 0;  // threads waiting for a task
};

}  // namespace

// The batch elements of one vmap with an axis name.
class VmapGroup {
 public:
  VmapGroup(const VmapPlan& plan, int size, Device device, DeviceContext* ctx)
      : plan_(plan), size_(size), device_(device), ctx_(ctx), members_(size) {}
  ~VmapGroup() {
    if (set_) CommunicatorPool::instance().give_back(std::move(set_), !aborted_.load());
  }

  const std::string& axis_name() const { return plan_.options.axis_name; }
  int size() const { return size_; }
  bool aborted() const {
    return aborted_.load(std::memory_order_acquire) || (ctx_ != nullptr && ctx_->call->aborted());
  }
  [[noreturn]] void throw_aborted() {
    if (!aborted_.load() && ctx_ != nullptr && ctx_->call->aborted()) ctx_->call->throw_aborted();
    throw VmapAbort{};
  }

  Communicator& enter(int member, const OpSignature& sig, const std::string& what, Cancel& cancel) {
    CommunicatorSet* set;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (aborted_) throw_aborted();
      Member& me = members_[member];
      ++me.collectives;
      me.hash = sig.hash();
      me.what = what;
      for (int j = 0; j < size_; ++j) {
        const Member& other = members_[j];
        if (other.finished && other.collectives < me.collectives) returned_early(j, member);
        if (other.collectives == me.collectives && other.hash != me.hash) {
          mismatch(fmt::format("element {} ran {} and element {} ran {} (their number {})", j,
                               other.what, member, what, me.collectives));
        }
      }
      if (!set_) set_ = CommunicatorPool::instance().acquire(std::vector<Device>(size_, device_));
      set = set_.get();
    }
    return set->handle(member, cancel);
  }

  void take_turn(int member) {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t k = members_[member].turns;
    const uint64_t mine = k * static_cast<uint64_t>(size_) + static_cast<uint64_t>(member);
    const auto deadline = Cancel::Clock::now() + timeout();
    while (served_ != mine) {
      if (aborted()) throw_aborted();
      for (int j = 0; j < member; ++j) {
        if (members_[j].finished && members_[j].turns <= k) {
          mismatch(
              fmt::format("element {} returned from {} after {} collectives over other axes "
                          "while element {} waits to run its number {}",
                          j, plan_.fun_name, members_[j].turns, member, k + 1));
        }
      }
      if (Cancel::Clock::now() >= deadline) {
        fail_group(std::make_exception_ptr(CollectiveTimeout(fmt::format(
            "vmap of {} over '{}': element {} waited {} s for the elements before it to run their "
            "collective number {} over other axes; a batch element is stuck in f",
            plan_.fun_name, axis_name(), member, collective_timeout_s(), k + 1))));
        throw VmapAbort{};
      }
      // Polled: the enclosing call's abort does not notify this group.
      cv_.wait_for(lock, std::chrono::milliseconds(20));
    }
  }

  void end_turn(int member) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++members_[member].turns;
      ++served_;
    }
    cv_.notify_all();
  }

  // The body of `member` returned: every other element must not wait in a collective it skipped.
  void finish(int member) {
    std::lock_guard<std::mutex> lock(mu_);
    Member& me = members_[member];
    me.finished = true;
    for (int j = 0; j < size_; ++j) {
      if (members_[j].collectives > me.collectives) returned_early(member, j);
    }
    cv_.notify_all();
  }

  // A member's collective passed its deadline: the members that have not entered it.
  [[noreturn]] void timeout(int member) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::vector<int> missing;
      for (int j = 0; j < size_; ++j) {
        if (members_[j].collectives < members_[member].collectives) missing.push_back(j);
      }
      fail_group(std::make_exception_ptr(CollectiveTimeout(fmt::format(
          "vmap of {}: batch elements [{}] did not enter {} within {} s (element {} waited); "
          "every element must run the same collectives over '{}'",
          plan_.fun_name, fmt::join(missing, ", "), members_[member].what, collective_timeout_s(),
          member, axis_name()))));
    }
    throw VmapAbort{};
  }

  // Aborts the group (an element raised): every element waiting, or about to wait, throws.
  void abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_.store(true, std::memory_order_release);
    if (set_) set_->abort();
    cv_.notify_all();
  }

  // The error the group itself detected (mismatch, timeout), or null.
  std::exception_ptr error() {
    std::lock_guard<std::mutex> lock(mu_);
    return error_;
  }

  Cancel::Clock::duration timeout() const {
    return std::chrono::duration_cast<Cancel::Clock::duration>(
        std::chrono::duration<double>(collective_timeout_s()));
  }

 private:
  struct Member {
    uint64_t collectives = 0;  // over the batch axis, entered so far
    uint64_t hash = 0;         // signature of the last one
    std::string what;          // its description
    uint64_t turns = 0;        // operations over other axes run so far
    bool finished = false;     // the body returned
  };

  // Element `done` returned from f while element `waiting` entered a collective it never ran.
  // Holds mu_.
  [[noreturn]] void returned_early(int done, int waiting) {
    const Member& w = members_[waiting];
    mismatch(fmt::format(
        "element {} returned from {} after {} collectives over '{}' while element {} entered {} "
        "(its collective number {})",
        done, plan_.fun_name, members_[done].collectives, axis_name(), waiting, w.what,
        w.collectives));
  }

  // Records `error` as the group's (first wins) and aborts. Holds mu_.
  void fail_group(std::exception_ptr error) {
    if (!error_) error_ = std::move(error);
    aborted_.store(true, std::memory_order_release);
    if (set_) set_->abort();
    cv_.notify_all();
  }

  // Holds mu_.
  [[noreturn]] void mismatch(const std::string& detail) {
    fail_group(std::make_exception_ptr(CollectiveMismatch(fmt::format(
        "vmap of {} over '{}': batch elements ran different collectives: {}. Every element must "
        "run the same collectives in the same order.",
        plan_.fun_name, axis_name(), detail))));
    throw VmapAbort{};
  }

  const VmapPlan& plan_;
  const int size_;
  const Device device_;
  DeviceContext* const ctx_;
  std::atomic<bool> aborted_{false};
  std::mutex mu_;  // guards what follows
  std::condition_variable cv_;
  std::vector<Member> members_;
  uint64_t served_ = 0;  // operations over other axes run by all elements
  std::unique_ptr<CommunicatorSet> set_;
  std::exception_ptr error_;
};

const std::string& VmapFrame::axis_name() const { return group_->axis_name(); }
int VmapFrame::size() const { return group_->size(); }

Communicator& VmapFrame::enter(const OpSignature& sig) {
  what_ = sig.describe_over(fmt::format("'{}'", axis_name()));
  deadline_ = Clock::now() + group_->timeout();
  return group_->enter(index_, sig, what_, *this);
}

void VmapFrame::take_turn() { group_->take_turn(index_); }
void VmapFrame::end_turn() { group_->end_turn(index_); }
bool VmapFrame::aborted() const { return group_->aborted(); }
void VmapFrame::throw_aborted() { group_->throw_aborted(); }
void VmapFrame::deadline_passed() { group_->timeout(index_); }

VmapFrame* current_vmap_frame() { return tls_frame; }

VmapFrame* swap_vmap_frame(VmapFrame* frame) {
  VmapFrame* previous = tls_frame;
  tls_frame = frame;
  return previous;
}

VmapTurns::~VmapTurns() {
  for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) (*it)->end_turn();
}

void VmapTurns::take(VmapFrame* frame) {
  frame->take_turn();
  frames_.push_back(frame);
}

namespace {

std::string plural(size_t n, const char* one, const char* many) { return n == 1 ? one : many; }

// Python's tuple form of a shape: "(2, 3)", "(3,)", "()".
std::string tuple_str(const Shape& shape) {
  return fmt::format("({}{})", fmt::join(shape, ", "), shape.size() == 1 ? "," : "");
}

// Each leaf's batch axis (normalized), from in_axes by argument.
std::vector<std::optional<int>> leaf_axes(const VmapPlan& plan, const std::vector<Array>& leaves,
                                          const ArgLayout& layout) {
  const auto& in_axes = plan.in_axes;
  const size_t nargs = layout.args().size();
  if (in_axes.empty() || (in_axes.size() != 1 && in_axes.size() != nargs)) {
    throw ValueError(fmt::format(
        "vmap in_axes must be one entry for every Array argument or one entry per Array argument "
        "of {}, but got len(in_axes)={}, len(args)={}",
        plan.fun_name, in_axes.size(), nargs));
  }
  if (std::none_of(in_axes.begin(), in_axes.end(), [](auto a) { return a.has_value(); })) {
    throw ValueError("vmap must have at least one non-None value in in_axes");
  }
  std::vector<std::optional<int>> axes(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    std::optional<int> a = in_axes.size() == 1 ? in_axes[0] : in_axes[layout.arg_of(i)];
    if (!a) continue;
    const int n = leaves[i].ndim();
    if (*a < -n || *a >= n) {
      throw ValueError(fmt::format(
          "vmap was requested to map its argument along axis {}, which implies that its rank "
          "should be at least {}, but is only {} (its shape is {})",
          *a, *a < 0 ? -*a : *a + 1, n, tuple_str(leaves[i].shape())));
    }
    axes[i] = *a < 0 ? *a + n : *a;
  }
  return axes;
}

// The batch size all mapped axes agree on; JAX's message when they do not.
int64_t batch_size(const std::vector<Array>& leaves, const std::vector<std::optional<int>>& axes,
                   const ArgLayout& layout) {
  std::map<int64_t, std::vector<size_t>> by_size;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (axes[i]) by_size[leaves[i].shape()[*axes[i]]].push_back(i);
  }
  if (by_size.size() == 1) return by_size.begin()->first;
  std::vector<std::pair<int64_t, std::vector<size_t>>> sizes(by_size.begin(), by_size.end());
  std::stable_sort(sizes.begin(), sizes.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::string lines;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const auto& [size, leaves_of] = sizes[k];
    const size_t i = leaves_of[0];
    std::string where = fmt::format("axis {} of {} of type {}", *axes[i], layout.leaf_name(i),
                                    long_type(leaves[i]));
    if (leaves_of.size() == 1) {
      lines += fmt::format("\n  * one axis had size {}: {}", size, where);
    } else {
      lines += fmt::format("\n  * {} ({} of them) had size {}, e.g. {}",
                           k == 0 ? "most axes" : "some axes", leaves_of.size(), size, where);
    }
    lines += k + 1 < sizes.size() ? ";" : "";
  }
  throw ValueError("vmap got inconsistent sizes for array axes to be mapped:" + lines);
}

// The inputs of batch element b.
std::vector<Array> element_blocks(const std::vector<Array>& leaves,
                                  const std::vector<std::optional<int>>& axes, int64_t b) {
  std::vector<Array> blocks;
  blocks.reserve(leaves.size());
  for (size_t i = 0; i < leaves.size(); ++i) {
    blocks.push_back(axes[i] ? take(leaves[i], b, *axes[i]) : leaves[i]);
  }
  return blocks;
}

// Output k of every element, stacked along its out_axes entry (or, for nullopt, the common value).
Array stack_output(const VmapPlan& plan, const std::vector<std::vector<Array>>& outs, size_t k,
                   std::optional<int> axis) {
  const Array& first = outs[0][k];
  for (size_t b = 1; b < outs.size(); ++b) {
    const Array& o = outs[b][k];
    if (o.dtype() != first.dtype() || o.shape() != first.shape()) {
      throw ValueError(fmt::format(
          "vmap of {}: output {} has type {} for batch element 0 but {} for element {}; f must "
          "return the same shapes and dtypes for every element",
          plan.fun_name, k, long_type(first), long_type(o), b));
    }
  }
  if (!axis) {
    for (size_t b = 1; b < outs.size(); ++b) {
      if (!array_equal(outs[b][k], first)) {
        throw ValueError(fmt::format(
            "vmap has mapped output but out_axes is None: output {} of {} differs between batch "
            "elements 0 and {}; give it an out_axes entry to stack it",
            k, plan.fun_name, b));
      }
    }
    return first;
  }
  const int n = first.ndim() + 1;
  if (*axis < -n || *axis >= n) {
    throw ValueError(fmt::format(
        "vmap out_axes entry {} for output {} of {} is out of bounds for its batched rank {} "
        "(output type {}); give an axis in [{}, {})",
        *axis, k, plan.fun_name, n, long_type(first), -n, n));
  }
  std::vector<Array> column;
  column.reserve(outs.size());
  for (const std::vector<Array>& o : outs) column.push_back(o[k]);
  return stack(column, *axis < 0 ? *axis + n : *axis);
}

std::vector<Array> assemble(const VmapPlan& plan, const std::vector<std::vector<Array>>& outs) {
  const size_t count = outs[0].size();
  for (size_t b = 1; b < outs.size(); ++b) {
    if (outs[b].size() != count) {
      throw ValueError(
          fmt::format("vmap of {}: batch element 0 returned {} outputs but element {} returned {}",
                      plan.fun_name, count, b, outs[b].size()));
    }
  }
  const auto& out_axes = plan.out_axes;
  if (count > 0 && (out_axes.empty() || (out_axes.size() != 1 && out_axes.size() != count))) {
    throw ValueError(fmt::format(
        "vmap out_axes must be one entry for every output or one entry per output of {}, but got "
        "len(out_axes)={} for {} {}",
        plan.fun_name, out_axes.size(), count, plural(count, "output", "outputs")));
  }
  std::vector<Array> result;
  result.reserve(count);
  for (size_t k = 0; k < count; ++k) {
    result.push_back(stack_output(plan, outs, k, out_axes.size() == 1 ? out_axes[0] : out_axes[k]));
  }
  return result;
}

// The device the batch elements' collectives run on.
Device group_device(const DeviceContext* ctx, const std::vector<Array>& leaves,
                    const std::vector<std::optional<int>>& axes) {
  if (ctx != nullptr) return ctx->device;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (axes[i]) return leaves[i].addressable_shards().front().device;
  }
  return devices().front();
}

// Runs every element on its own thread (element 0 on this one) as members of one group.
std::vector<std::vector<Array>> run_grouped(const VmapPlan& plan, const std::vector<Array>& leaves,
                                            const std::vector<std::optional<int>>& axes,
                                            int64_t size, const BodyRef& body) {
  DeviceContext* ctx = current_device_context();
  const Device device = group_device(ctx, leaves, axes);
  if (!(device.platform == Platform::kCpu)) {
    throw NotImplementedError(fmt::format(
        "vmap of {} with axis_name '{}' on {}: its batch elements run on one host thread each, "
        "and a {} device is driven by one thread at a time. Drop axis_name (the elements then "
        "run in a loop), or map the batch over devices with shard_map.",
        plan.fun_name, plan.options.axis_name, device.str(), device.platform.name()));
  }
  const int n = static_cast<int>(size);
  VmapGroup group(plan, n, device, ctx);
  std::vector<VmapFrame> frames;
  frames.reserve(n);
  for (int b = 0; b < n; ++b) frames.emplace_back(&group, b, tls_frame);
  std::vector<std::vector<Array>> outs(n);
  std::vector<std::exception_ptr> errors(n);
  const Mesh* context_mesh = ctx == nullptr ? thread_context_mesh() : nullptr;
  auto run = [&](int b) {
    FrameScope frame(&frames[b]);
    try {
      outs[b] = body.call(body.object, element_blocks(leaves, axes, b));
      group.finish(b);
    } catch (const VmapAbort&) {
      // Another element failed or the group found a mismatch: reported below.
    } catch (...) {
      errors[b] = std::current_exception();
      group.abort();
    }
  };
  std::mutex done_mu;
  std::condition_variable done_cv;
  int running = n - 1;
  std::exception_ptr start_error;
  for (int b = 1; b < n && !start_error; ++b) {
    auto task = [&, b] {
      {
        DeviceScope device_scope(ctx);
        std::optional<MeshScope> mesh_scope;
        if (context_mesh != nullptr) mesh_scope.emplace(*context_mesh);
        run(b);
      }
      std::lock_guard<std::mutex> lock(done_mu);
      if (--running == 0) done_cv.notify_one();
    };
    try {
      BatchThreads::instance().run(task);
    } catch (...) {  // no thread could start (std::system_error): the rest never run
      start_error = std::current_exception();
      group.abort();
      std::lock_guard<std::mutex> lock(done_mu);
      running -= n - b;
    }
  }
  run(0);
  std::unique_lock<std::mutex> lock(done_mu);
  done_cv.wait(lock, [&] { return running == 0; });
  if (start_error) std::rethrow_exception(start_error);
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  if (std::exception_ptr e = group.error()) std::rethrow_exception(e);
  return outs;
}

}  // namespace

std::vector<Array> run_vmap(const VmapPlan& plan, std::vector<Array> leaves,
                            const ArgLayout& layout, BodyRef body, int num_outputs) {
  (void)num_outputs;  // the outputs are counted per element (a std::vector body may vary)
  const std::vector<std::optional<int>> axes = leaf_axes(plan, leaves, layout);
  const int64_t size = batch_size(leaves, axes, layout);
  if (size == 0) {
    throw NotImplementedError(fmt::format(
        "vmap of {} over an axis of size 0: spmd runs f once per batch element, so it cannot "
        "know the shapes of an empty batch's outputs",
        plan.fun_name));
  }
  std::vector<std::vector<Array>> outs;
  if (plan.options.axis_name.empty()) {
    outs.reserve(size);
    for (int64_t b = 0; b < size; ++b) {
      outs.push_back(body.call(body.object, element_blocks(leaves, axes, b)));
    }
  } else {
    outs = run_grouped(plan, leaves, axes, size, body);
  }
  return assemble(plan, outs);
}

namespace {

// `spec` with the batch dimension inserted at `axis` (split over `names`, or None).
PartitionSpec insert_batch(const PartitionSpec& spec, int axis,
                           const std::vector<std::string>& names) {
  std::vector<PartitionSpec::Entry> entries = spec.entries();
  if (axis < 0) {
    throw ValueError(fmt::format(
        "vmap of a shard_map takes non-negative in_axes/out_axes (the specs do not give the "
        "ranks), got {}",
        axis));
  }
  while (static_cast<int>(entries.size()) < axis) entries.emplace_back(None);
  entries.insert(entries.begin() + axis,
                 names.empty() ? PartitionSpec::Entry(None) : PartitionSpec::Entry(names));
  return PartitionSpec(std::move(entries));
}

SpecEntry batch_entry(const SpecEntry& entry, std::optional<int> axis,
                      const std::vector<std::string>& names) {
  if (!axis) return entry;
  std::vector<PartitionSpec> specs;
  for (const PartitionSpec& s : entry.specs()) specs.push_back(insert_batch(s, *axis, names));
  if (!entry.per_element()) return SpecEntry(specs[0]);
  return SpecEntry::list(std::move(specs));
}

Specs batch_specs(const Specs& specs, const std::vector<std::optional<int>>& axes,
                  const std::vector<std::string>& names, const char* what) {
  const auto& entries = specs.entries();
  if (specs.is_single() && axes.size() == 1) {
    return Specs(batch_entry(entries[0], axes[0], names).specs()[0]);
  }
  const size_t n = specs.is_single() ? axes.size() : entries.size();
  if (axes.size() != 1 && axes.size() != n) {
    throw ValueError(fmt::format(
        "vmap of a shard_map: {} has {} entries but the vmap gives {}; give one axis for all "
        "or one per entry",
        what, n, axes.size()));
  }
  std::vector<SpecEntry> out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(batch_entry(entries[specs.is_single() ? 0 : i],
                              axes.size() == 1 ? axes[0] : axes[i], names));
  }
  return Specs::list(std::move(out));
}

}  // namespace

ShardMapPlan batch_shard_map_plan(const ShardMapPlan& plan, const VmapPlan& vmap) {
  const std::vector<std::string>& names = vmap.options.spmd_axis_name;
  for (const std::string& name : names) {
    auto uses = [&](const Specs& specs) {
      for (const SpecEntry& e : specs.entries()) {
        for (const PartitionSpec& s : e.specs()) {
          for (const std::string& n : s.axis_names()) {
            if (n == name) return true;
          }
        }
      }
      return false;
    };
    if (uses(plan.in_specs) || uses(plan.out_specs)) {
      throw ValueError(fmt::format(
          "vmap spmd_axis_name ('{}',) cannot appear in shard_map in_specs or out_specs (the "
          "shard_map of {} has in_specs {} and out_specs {}); split the batch over another mesh "
          "axis",
          fmt::join(names, "', '"), plan.fun_name, plan.in_specs.str(), plan.out_specs.str()));
    }
  }
  if (!names.empty() && !vmap.options.axis_name.empty()) {
    throw NotImplementedError(fmt::format(
        "vmap of the shard_map of {} with both axis_name '{}' and spmd_axis_name: its devices "
        "would each hold part of the batch, and collectives over '{}' would not see all of it. "
        "Drop spmd_axis_name (every device then holds the whole batch).",
        plan.fun_name, vmap.options.axis_name, vmap.options.axis_name));
  }
  ShardMapPlan out = plan;
  out.in_specs = batch_specs(plan.in_specs, vmap.in_axes, names, "in_specs");
  out.out_specs = batch_specs(plan.out_specs, vmap.out_axes, names, "out_specs");
  if (!names.empty() && !out.options.axis_names.empty()) {
    out.options.axis_names.insert(names.begin(), names.end());
  }
  return out;
}

}  // namespace spmd::internal
