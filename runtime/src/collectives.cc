// SPDX-License-Identifier: Apache-2.0
// The collectives (spmd/collectives.h): argument checks with JAX's messages, group lookup,
// varying-manual-axes bookkeeping; the data movement is the backend's Communicator.
#include "spmd/collectives.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <span>

#include "array_impl.h"
#include "backend/dims.h"
#include "checks.h"
#include "collectives_internal.h"
#include "exec/call_context.h"
#include "layout.h"
#include "spmd/errors.h"
#include "spmd/ops.h"
#include "vmap_internal.h"

namespace spmd {

AxisNames::AxisNames(const char* name) {
  if (name == nullptr) throw TypeError("axis names must be strings, got a null const char*");
  names_.emplace_back(name);
}

AxisNames::AxisNames(std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) names_.emplace_back(n);
}

std::string AxisNames::str() const {
  if (names_.size() == 1) return fmt::format("'{}'", names_[0]);
  std::string out;
  for (const std::string& n : names_) out += fmt::format("{}'{}'", out.empty() ? "" : ", ", n);
  return "(" + out + (names_.size() == 1 ? ",)" : ")");
}

namespace internal {
namespace {

// The axes of one collective call, resolved against the enclosing vmaps' batch axes, then the
// body's mesh.
struct Bound {
  DeviceContext* ctx;
  std::vector<int> axes;  // mesh axis indices, caller order
  uint64_t mask = 0;
  int64_t size = 1;           // product of the axes' sizes
  VmapFrame* vmap = nullptr;  // the batch element whose vmap axis is named, if one is
  VmapTurns turns;            // held in the vmaps between this thread and the named axes
};

// Binds `names` to an enclosing vmap's batch axis (a name shadows a mesh axis, as in JAX), or
// takes this element's turn in each vmap passed on the way to the mesh. `communicates`: the
// operation moves data (axis_index and axis_size do not, and need no turn).
bool bind_vmap(const AxisNames& names, const char* api, bool communicates, Bound& b) {
  for (VmapFrame* frame = current_vmap_frame(); frame != nullptr; frame = frame->parent()) {
    const auto& all = names.names();
    if (std::find(all.begin(), all.end(), frame->axis_name()) != all.end()) {
      if (all.size() != 1) {
        throw NotImplementedError(fmt::format(
            "{} over {}: the vmapped axis '{}' can be combined with other axes only in psum, "
            "pmean, pmax and pmin; run one {} per axis.",
            api, names.str(), frame->axis_name(), api));
      }
      b.vmap = frame;
      b.size = frame->size();
      return true;
    }
    if (communicates) b.turns.take(frame);
  }
  return false;
}

Bound bind(const AxisNames& names, const char* api, bool communicates = true) {
  DeviceContext* ctx = current_device_context();
  auto unbound = [&](const std::string& name, const std::string& why) {
    return NameError(fmt::format(
        "Found an unbound axis name: {}. To fix this, please call {} under `spmd::shard_map`{}.",
        name, api, why));
  };
  if (names.names().empty()) {
    throw ValueError(fmt::format("{} needs at least one axis name, got ()", api));
  }
  Bound b{ctx, {}, 0, 1};
  if (bind_vmap(names, api, communicates, b)) return b;
  for (const std::string& name : names.names()) {
    if (ctx == nullptr) throw unbound(name, " (or a pmap body)");
    const Mesh& mesh = ctx->call->mesh();
    int a = mesh.axis_index(name);
    if (a < 0) {
      throw unbound(name, fmt::format("; the enclosing call's mesh has axes {}", mesh.names_str()));
    }
    if (!(ctx->bound >> a & 1)) {
      throw unbound(name, fmt::format("; '{}' is a mesh axis of {} but it is not bound here (not "
                                      "manual in this shard_map, see ShardMapOptions::axis_names, "
                                      "or an inner pmap's axis)",
                                      name, mesh.str()));
    }
    if (b.mask >> a & 1) {
      throw ValueError(
          fmt::format("{} got the axis name '{}' twice in {}", api, name, names.str()));
    }
    b.axes.push_back(a);
    b.mask |= uint64_t{1} << a;
    b.size *= mesh.axis_sizes()[a];
  }
  return b;
}

std::string groups_str(const AxisIndexGroups& groups) {
  std::string out;
  for (const std::vector<int>& g : groups) {
    out += fmt::format("{}[{}]", out.empty() ? "" : ", ", fmt::join(g, ", "));
  }
  return "[" + out + "]";
}

// Validates axis_index_groups: positions in range, every position exactly once (JAX checks only
// that the union is range(total); we also require total == group size), and equal sizes where the
// result shape depends on them.
void check_groups(const AxisIndexGroups& groups, int64_t size, bool equal_sizes, const char* api) {
  if (groups.empty()) return;
  std::vector<int> seen(size, 0);
  bool cover = true;
  for (const std::vector<int>& g : groups) {
    if (g.empty()) {
      throw ValueError(fmt::format(
          "axis_index_groups must not contain an empty group: {} got {}; list each position in "
          "exactly one non-empty group.",
          api, groups_str(groups)));
    }
    for (int p : g) {
      if (p < 0 || p >= size) {
        cover = false;
      } else {
        cover = cover && seen[p]++ == 0;
      }
    }
  }
  cover = cover && std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; });
  if (!cover) {
    throw ValueError(fmt::format(
        "axis_index_groups must cover all indices exactly once: {} got {} for axes of total size "
        "{}; give every position 0..{} exactly once.",
        api, groups_str(groups), size, size - 1));
  }
  for (const std::vector<int>& g : groups) {
    if (equal_sizes && g.size() != groups[0].size()) {
      throw ValueError(fmt::format("{}: axis_index_groups must all be the same size, got {}", api,
                                   groups_str(groups)));
    }
  }
}

uint64_t groups_hash(const AxisIndexGroups& groups) {
  uint64_t h = 0x9e3779b97f4a7c15ull;
  for (const std::vector<int>& g : groups) {
    h = hash_combine(h, g.size());
    for (int p : g) h = hash_combine(h, static_cast<uint64_t>(p));
  }
  return h;
}

// One collective on this device, for the lifetime of the scope: entering publishes its signature
// (and checks the other devices) and finds this device's communicator; leaving publishes that
// the device runs user code again. A collective that throws does not leave: the device unwinds
// with the call's error, and its status stays where it failed.
class CollectiveScope {
 public:
  CollectiveScope(const Bound& b, OpSignature sig, const AxisIndexGroups& group_list)
      : ctx_(b.ctx), vmap_(b.vmap) {
    if (vmap_ != nullptr) {
      if (!group_list.empty()) {
        throw NotImplementedError(fmt::format(
            "axis_index_groups over the vmapped axis '{}' are not supported; split the batch "
            "with reshape and vmap twice instead",
            vmap_->axis_name()));
      }
      comm_ = &vmap_->enter(sig);
      return;
    }
    sig.naxes = static_cast<int>(b.axes.size());
    for (int i = 0; i < sig.naxes && i < OpSignature::kMaxAxes; ++i) {
      sig.axes[i] = static_cast<int8_t>(b.axes[i]);
    }
    sig.extra_hash = hash_combine(sig.extra_hash, groups_hash(group_list));
    comm_ = &ctx_->call->enter(ctx_->rank, sig, b.axes, group_list);
  }
  ~CollectiveScope() {
    if (vmap_ == nullptr && std::uncaught_exceptions() == exceptions_) {
      ctx_->call->leave(ctx_->rank);
    }
  }
  CollectiveScope(const CollectiveScope&) = delete;
  CollectiveScope& operator=(const CollectiveScope&) = delete;

  Communicator& comm() const { return *comm_; }
  Cancel& cancel() const {
    return vmap_ != nullptr ? static_cast<Cancel&>(*vmap_) : static_cast<Cancel&>(*ctx_->call);
  }
  int rank() const { return vmap_ != nullptr ? vmap_->index() : ctx_->group_rank; }
  int group_size() const {
    return vmap_ != nullptr ? vmap_->size() : static_cast<int>(ctx_->members->size());
  }

 private:
  DeviceContext* ctx_;
  VmapFrame* vmap_;
  Communicator* comm_;
  int exceptions_ = std::uncaught_exceptions();
};

OpSignature signature(CollectiveKind kind, const Array& x) {
  OpSignature sig;
  sig.kind = kind;
  sig.dtype = x.dtype();
  sig.set_shape(x.shape());
  return sig;
}

Communicator::Keep keep_of(const Array& local_array) { return single_shard(local_array).buffer; }

// What a communicator reduces for elements of dt: a complex sum is the sum of its real and
// imaginary parts, so complex arrays reach every backend as twice as many elements of their real
// type (communicators reduce real types only).
struct Reduced {
  DType dtype;
  int64_t lanes;
};
Reduced reduced_as(DType dt) { return {real_dtype(dt), is_complex(dt) ? 2 : 1}; }

// pmax/pmin of complex: XLA has no complex max reduction across devices (JAX fails at run time
// with UNIMPLEMENTED); spmd says so before any device starts it.
void check_orderable(const Array& x, ReduceKind op, const char* api) {
  if (op != ReduceKind::kSum && is_complex(x.dtype())) {
    throw TypeError(fmt::format(
        "{} does not accept dtype {}: complex numbers have no order to reduce across devices "
        "(JAX fails with UNIMPLEMENTED); reduce spmd::real(x) and spmd::imag(x), or spmd::abs(x)",
        api, x.dtype()));
  }
}

// The result of a collective that may lend memory: `out`, or an array of `dtype` and `shape`
// on this device in the memory lent (whose owner is the Keep of an array's shard: its
// Buffer).
Array result_of(const Communicator::Lent& lent, const Array& out, DType dtype, const Shape& shape) {
  if (!lent.owner) return out;
  auto buffer = std::const_pointer_cast<Buffer>(std::static_pointer_cast<const Buffer>(lent.owner));
  const size_t offset =
      static_cast<const char*>(lent.data) - static_cast<const char*>(buffer->data());
  return array_alias(dtype, shape, buffer, offset, current_device());
}

const void* data_of(const Array& a) { return const_view(a).data; }
void* data_of_mut(const Array& a) { return mut_view(a).data; }

// The output a member of `comm` passes to a shared collective (all_reduce_shared,
// all_gather_shared): none where it is always lent the result, except for an empty result, which
// may have no memory to lend. Then its data and keep, null for none.
Array shared_output(const Communicator& comm, DType dtype, const Shape& shape) {
  if (comm.lends_shared_results() && element_count(shape) > 0) return Array();
  return empty_array(dtype, shape);
}
void* output_data(const Array& out) { return out.valid() ? data_of_mut(out) : nullptr; }
Communicator::Keep output_keep(const Array& out) { return out.valid() ? keep_of(out) : nullptr; }

// The vma of a result: only tracked when check_vma is on.
Array typed(Array out, const Bound& b, uint64_t vma) {
  return with_vma(std::move(out), b.ctx != nullptr && b.ctx->track_vma ? vma : 0);
}

// For a reduction over several axes one of which is an enclosing vmap's batch axis: that axis
// and the others, reduced one after the other (JAX's VmapPmapCollectivesTest reduces over a vmap
// and a pmap axis at once).
std::optional<std::pair<AxisNames, AxisNames>> split_batch_axis(const AxisNames& axes) {
  const std::vector<std::string>& names = axes.names();
  if (names.size() < 2) return std::nullopt;
  for (VmapFrame* frame = current_vmap_frame(); frame != nullptr; frame = frame->parent()) {
    auto it = std::find(names.begin(), names.end(), frame->axis_name());
    if (it == names.end()) continue;
    std::vector<std::string> rest(names.begin(), it);
    rest.insert(rest.end(), it + 1, names.end());
    return std::make_pair(AxisNames(*it), AxisNames(std::move(rest)));
  }
  return std::nullopt;
}

// The dtype a reduction runs in: psum of bool sums int32 (JAX), everything else keeps its dtype.
DType reduced_dtype(DType dt, ReduceKind op) {
  return dt == DType::kBool && op == ReduceKind::kSum ? DType::kInt32 : dt;
}

// `x` as a local array of `dtype`.
Array reduction_input(const Array& x, DType dtype) {
  return local(x.dtype() == dtype ? x : astype(x, dtype));
}

// The operands of a many-array reduction copied one after another into one dense vector of
// `dtype` (same-dtype operands travel in one collective); `offsets` receives where each starts.
Array pack(std::span<const Array> xs, DType dtype, std::vector<int64_t>& offsets) {
  int64_t total = 0;
  for (const Array& x : xs) {
    offsets.push_back(total);
    total += x.size();
  }
  Array packed = empty_array(dtype, {total});
  char* base = static_cast<char*>(data_of_mut(packed));
  for (size_t i = 0; i < xs.size(); ++i) {
    if (xs[i].size() == 0) continue;
    Array in = reduction_input(xs[i], dtype);
    ConstView src = const_view(in);
    MutView dst{base + offsets[i] * itemsize(dtype), dtype, src.shape, dense_strides(src.shape)};
    kernels().copy(src, dst);
  }
  return packed;
}

// A many-array reduction's signature: the packed vector's, with the operands' count and shapes,
// so that devices passing differently shaped operands get CollectiveMismatch.
OpSignature packed_signature(CollectiveKind kind, const Array& packed, std::span<const Array> xs) {
  OpSignature sig = signature(kind, packed);
  sig.params[0] = static_cast<int64_t>(xs.size());
  for (const Array& x : xs) {
    sig.extra_hash = hash_combine(sig.extra_hash, static_cast<uint64_t>(x.ndim()));
    for (int64_t d : x.shape()) sig.extra_hash = hash_combine(sig.extra_hash, d);
  }
  return sig;
}

// Reduces `xs`, which share a reduced dtype, in one collective: one operand as it is, several
// packed into one vector whose result they then view. outs[i] receives xs[i]'s result; `members`
// the size of this device's group.
void reduce_together(CollectiveKind kind, ReduceKind op, std::span<const Array> xs,
                     const AxisNames& axes, const ReduceOptions& options, const char* api,
                     std::span<Array> outs, int64_t& members) {
  Bound b = bind(axes, api);
  check_groups(options.axis_index_groups, b.size, false, api);
  const DType dtype = reduced_dtype(xs[0].dtype(), op);
  std::vector<int64_t> offsets;
  Array in = xs.size() == 1 ? reduction_input(xs[0], dtype) : pack(xs, dtype, offsets);
  OpSignature sig = xs.size() == 1 ? signature(kind, in) : packed_signature(kind, in, xs);
  Array out;
  {
    CollectiveScope scope(b, sig, options.axis_index_groups);
    Communicator& comm = scope.comm();
    out = shared_output(comm, dtype, in.shape());
    const Reduced as = reduced_as(dtype);
    out = result_of(
        comm.all_reduce_shared(op, as.dtype, in.size() * as.lanes, data_of(in), output_data(out),
                               output_keep(out), keep_of(in), scope.cancel()),
        out, in.dtype(), in.shape());
    members = scope.group_size();
  }
  // Grouped reductions stay varying over the axes: different groups hold different values.
  const bool whole = members == b.size;
  auto vma = [&](const Array& x) { return whole ? vma_of(x) & ~b.mask : vma_of(x) | b.mask; };
  if (xs.size() == 1) {
    outs[0] = typed(std::move(out), b, vma(xs[0]));
    return;
  }
  const ShardData& result = single_shard(out);
  for (size_t i = 0; i < xs.size(); ++i) {
    Array view = array_alias(dtype, xs[i].shape(), result.buffer,
                             result.offset + offsets[i] * itemsize(dtype), current_device());
    outs[i] = typed(std::move(view), b, vma(xs[i]));
  }
}

// psum/pmean/pmax/pmin of several arrays (JAX's reduction of a pytree's leaves): one collective
// per reduced dtype, in the order each dtype first appears. `group_size`, when given, receives
// the size of this device's group.
std::vector<Array> reduce(CollectiveKind kind, ReduceKind op, std::span<const Array> xs,
                          const AxisNames& axes, const ReduceOptions& options, const char* api,
                          int64_t* group_size = nullptr) {
  if (auto split = split_batch_axis(axes)) {
    if (!options.axis_index_groups.empty()) {
      throw NotImplementedError(fmt::format(
          "{} over {} with axis_index_groups: groups over a vmapped axis and other axes at once "
          "are not supported",
          api, axes.str()));
    }
    int64_t batch = 1;
    int64_t others = 1;
    std::vector<Array> part = reduce(kind, op, xs, split->first, {}, api, &batch);
    std::vector<Array> out = reduce(kind, op, part, split->second, {}, api, &others);
    if (group_size != nullptr) *group_size = batch * others;
    return out;
  }
  for (const Array& x : xs) check_orderable(x, op, api);
  std::vector<Array> outs(xs.size());
  if (xs.empty()) {
    const Bound b = bind(axes, api, /*communicates=*/false);  // still reports unbound names
    if (group_size != nullptr) *group_size = b.size;
    return outs;
  }
  // The operands' positions by reduced dtype, dtypes in order of first appearance.
  std::vector<std::pair<DType, std::vector<size_t>>> by_dtype;
  for (size_t i = 0; i < xs.size(); ++i) {
    const DType dtype = reduced_dtype(xs[i].dtype(), op);
    auto it = std::find_if(by_dtype.begin(), by_dtype.end(),
                           [&](const auto& group) { return group.first == dtype; });
    if (it == by_dtype.end()) it = by_dtype.insert(by_dtype.end(), {dtype, {}});
    it->second.push_back(i);
  }
  for (const auto& [dtype, positions] : by_dtype) {
    std::vector<Array> ins, results(positions.size());
    for (size_t i : positions) ins.push_back(xs[i]);
    int64_t members = 0;
    reduce_together(kind, op, ins, axes, options, api, results, members);
    for (size_t k = 0; k < positions.size(); ++k) outs[positions[k]] = std::move(results[k]);
    if (group_size != nullptr) *group_size = members;
  }
  return outs;
}

// One array: the same collective without the vectors' allocations.
Array reduce(CollectiveKind kind, ReduceKind op, const Array& x, const AxisNames& axes,
             const ReduceOptions& options, const char* api, int64_t* group_size = nullptr) {
  if (split_batch_axis(axes)) {
    return reduce(kind, op, std::span<const Array>(&x, 1), axes, options, api, group_size)[0];
  }
  check_orderable(x, op, api);
  Array out;
  int64_t members = 0;
  reduce_together(kind, op, std::span<const Array>(&x, 1), axes, options, api,
                  std::span<Array>(&out, 1), members);
  if (group_size != nullptr) *group_size = members;
  return out;
}

}  // namespace

void barrier(const AxisNames& axes) {
  Bound b = bind(axes, "barrier");
  CollectiveScope scope(b, OpSignature{}, {});
  scope.comm().barrier(scope.cancel());
}

}  // namespace internal

using internal::Bound;
using internal::CollectiveKind;
using internal::ReduceKind;

Array psum(const Array& x, AxisNames axes, ReduceOptions options) {
  return internal::reduce(CollectiveKind::kPsum, ReduceKind::kSum, x, axes, options, "psum");
}

Array pmax(const Array& x, AxisNames axes, ReduceOptions options) {
  return internal::reduce(CollectiveKind::kPmax, ReduceKind::kMax, x, axes, options, "pmax");
}

Array pmin(const Array& x, AxisNames axes, ReduceOptions options) {
  return internal::reduce(CollectiveKind::kPmin, ReduceKind::kMin, x, axes, options, "pmin");
}

std::vector<Array> psum(const std::vector<Array>& xs, AxisNames axes, ReduceOptions options) {
  return internal::reduce(CollectiveKind::kPsum, ReduceKind::kSum, xs, axes, options, "psum");
}

std::vector<Array> pmax(const std::vector<Array>& xs, AxisNames axes, ReduceOptions options) {
  return internal::reduce(CollectiveKind::kPmax, ReduceKind::kMax, xs, axes, options, "pmax");
}

std::vector<Array> pmin(const std::vector<Array>& xs, AxisNames axes, ReduceOptions options) {
  return internal::reduce(CollectiveKind::kPmin, ReduceKind::kMin, xs, axes, options, "pmin");
}

namespace {

// JAX's pargmax/pargmin (_axis_index_of_val): the smallest position whose x equals the group's
// maximum (`max`) or minimum. A single axis only, checked before any collective runs.
Array arg_extremum(const Array& x, const AxisNames& axis, bool max, const char* api) {
  if (axis.names().size() != 1) {
    throw TypeError(fmt::format(
        "{} only accepts a single axis, got {}; reduce over one axis at a time", api, axis.str()));
  }
  internal::check_orderable(x, internal::ReduceKind::kMax, api);
  Array best = max ? pmax(x, axis) : pmin(x, axis);
  Array found = where(equal(x, best), axis_index(axis), std::numeric_limits<int32_t>::max());
  return pmin(found, axis);
}

}  // namespace

Array pargmax(const Array& x, AxisNames axis) { return arg_extremum(x, axis, true, "pargmax"); }

Array pargmin(const Array& x, AxisNames axis) { return arg_extremum(x, axis, false, "pargmin"); }

Array pmean(const Array& x, AxisNames axes, ReduceOptions options) {
  // Each device divides by its own group's size (JAX uses len(groups[0]) even for uneven groups).
  int64_t n = 1;
  Array total =
      internal::reduce(CollectiveKind::kPmean, ReduceKind::kSum, x, axes, options, "pmean", &n);
  return total / n;
}

std::vector<Array> pmean(const std::vector<Array>& xs, AxisNames axes, ReduceOptions options) {
  int64_t n = 1;
  std::vector<Array> totals =
      internal::reduce(CollectiveKind::kPmean, ReduceKind::kSum, xs, axes, options, "pmean", &n);
  for (Array& total : totals) total = total / n;
  return totals;
}

Array all_gather(const Array& x, AxisNames axes, AllGatherOptions options) {
  Bound b = internal::bind(axes, "all_gather");
  if (options.to == To::kReduced || options.to == To::kUnreduced) {
    throw NotImplementedError(
        "all_gather to=reduced/unreduced (JAX's unreduced types) is not "
        "supported; use To::kVarying or To::kInvariant");
  }
  if (options.to == To::kInvariant && !options.axis_index_groups.empty()) {
    throw ValueError(
        "all_gather with to=To::kInvariant (all_gather_invariant) does not take "
        "axis_index_groups: its result would not be invariant across groups");
  }
  internal::check_groups(options.axis_index_groups, b.size, true, "all_gather");
  int axis = options.tiled ? internal::checked_axis(options.axis, x.ndim(), "all_gather axis")
                           : internal::checked_axis(options.axis, x.ndim() + 1, "all_gather axis");
  Array in = internal::local(x);
  internal::OpSignature sig = internal::signature(CollectiveKind::kAllGather, in);
  sig.params[0] = axis;
  sig.params[1] = options.tiled;
  sig.params[2] = static_cast<int64_t>(options.to);
  Array out;
  {
    internal::CollectiveScope scope(b, sig, options.axis_index_groups);
    Shape shape = in.shape();
    if (options.tiled) {
      shape[axis] = internal::checked_size({shape[axis], scope.group_size()}, "all_gather",
                                           "gathered dimension");
    } else {
      shape.insert(shape.begin() + axis, scope.group_size());
    }
    int64_t outer = 1;
    for (int d = 0; d < axis; ++d) outer *= in.shape()[d];
    int64_t row_bytes = outer == 0 ? 0 : in.size() / outer * itemsize(in.dtype());
    internal::Communicator& comm = scope.comm();
    out = internal::shared_output(comm, in.dtype(), shape);
    out = internal::result_of(
        comm.all_gather_shared(outer, row_bytes, internal::data_of(in), internal::output_data(out),
                               internal::output_keep(out), internal::keep_of(in), scope.cancel()),
        out, in.dtype(), shape);
  }
  uint64_t vma =
      options.to == To::kInvariant ? internal::vma_of(x) & ~b.mask : internal::vma_of(x) | b.mask;
  return internal::typed(out, b, vma);
}

Array psum_scatter(const Array& x, AxisNames axes, PsumScatterOptions options) {
  Bound b = internal::bind(axes, "psum_scatter");
  internal::check_groups(options.axis_index_groups, b.size, true, "psum_scatter");
  int d =
      internal::checked_axis(options.scatter_dimension, x.ndim(), "psum_scatter scatter_dimension");
  int64_t g = options.axis_index_groups.empty()
                  ? b.size
                  : static_cast<int64_t>(options.axis_index_groups[0].size());
  int64_t s = x.shape()[d];
  if (!options.tiled && s != g) {
    throw ValueError(fmt::format(
        "reduce_scatter operand scatter dimension size {} must match shard count {}", s, g));
  }
  if (options.tiled && s % g != 0) {
    throw ValueError(
        fmt::format("tiled reduce_scatter operand scatter dimension size {} must be divisible by "
                    "shard_count {}",
                    s, g));
  }
  if (x.dtype() == DType::kBool) {
    // JAX reduces with add, which rejects bool (unlike psum, which sums bool as int32).
    throw TypeError(
        "psum_scatter: add does not accept dtype bool at position 0; cast the operand first, "
        "e.g. psum_scatter(x.astype(DType::kInt32), ...)");
  }
  Array in = internal::local(x);
  internal::OpSignature sig = internal::signature(CollectiveKind::kPsumScatter, in);
  sig.params[0] = d;
  sig.params[1] = options.tiled;
  internal::CollectiveScope scope(b, sig, options.axis_index_groups);
  Shape shape = in.shape();
  int64_t outer = 1;
  for (int k = 0; k < d; ++k) outer *= shape[k];
  int64_t inner = outer == 0 || g == 0 ? 0 : in.size() / outer / g;
  if (options.tiled) {
    shape[d] /= g;
  } else {
    shape.erase(shape.begin() + d);
  }
  Array out = internal::empty_array(in.dtype(), shape);
  const internal::Reduced as = internal::reduced_as(in.dtype());
  scope.comm().reduce_scatter(ReduceKind::kSum, as.dtype, outer, inner * as.lanes,
                              internal::data_of(in), internal::data_of_mut(out),
                              internal::keep_of(in), scope.cancel());
  return internal::typed(out, b, internal::vma_of(x) | b.mask);
}

namespace internal {
namespace {

// Moves data between positions: this device receives x from position `src` (zeros if < 0). The
// result varies over the axes unless every position receives the same value (`same_everywhere`).
Array permute_from(const Bound& b, CollectiveKind kind, const Array& x, int64_t perm_hash,
                   const std::function<int(int)>& source_of, bool same_everywhere = false) {
  Array in = local(x);
  OpSignature sig = signature(kind, in);
  sig.extra_hash = static_cast<uint64_t>(perm_hash);
  Array out;
  {
    CollectiveScope scope(b, sig, {});
    const int src = source_of(scope.rank());
    Communicator& comm = scope.comm();
    if (src < 0 || !comm.lends_inputs() || in.size() == 0) {
      out = empty_array(in.dtype(), in.shape());  // (an empty array may have no memory to lend)
    }
    out = result_of(comm.permute_shared(src, in.size() * itemsize(in.dtype()), data_of(in),
                                        output_data(out), keep_of(in), scope.cancel()),
                    out, in.dtype(), in.shape());
  }
  return typed(out, b, same_everywhere ? vma_of(x) : vma_of(x) | b.mask);
}

}  // namespace
}  // namespace internal

namespace {

// JAX numbers ppermute positions in mesh order whatever order the caller lists the axes in (0.10
// silently; later versions raise this error rather than permute otherwise than written).
void check_mesh_order(const Bound& b, const AxisNames& axes, const char* api) {
  for (size_t i = 1; i < b.axes.size(); ++i) {
    if (b.axes[i] < b.axes[i - 1]) {
      throw RuntimeError(
          fmt::format("Make sure that the axis_name passed to spmd::{} is in the same order as the "
                      "axis_names declared on the mesh: got {}, but the mesh declares {}.",
                      api, axes.str(), b.ctx->call->mesh().names_str()));
    }
  }
}

}  // namespace

Array ppermute(const Array& x, AxisNames axes, const std::vector<std::pair<int, int>>& perm) {
  Bound b = internal::bind(axes, "ppermute");
  check_mesh_order(b, axes, "ppermute");
  // The perm as JAX prints it, for errors only (formatting it costs more than the permute).
  auto given = [&perm] {
    std::string pairs;
    for (auto [s, d] : perm) pairs += fmt::format("{}({}, {})", pairs.empty() ? "" : ", ", s, d);
    return "(" + pairs + (perm.size() == 1 ? ",)" : ")");
  };
  internal::SmallVector<int, 64> source(b.size, -1);  // (no allocation per call)
  internal::SmallVector<uint8_t, 64> is_source(b.size, 0);
  uint64_t h = 0x51ed27ull;
  for (auto [src, dst] : perm) {
    if (src < 0 || src >= b.size || dst < 0 || dst >= b.size) {
      throw ValueError(fmt::format(
          "ppermute perm indices must be in range [0, {}) for the axes {} (of total size {}), got "
          "{} in perm {}.",
          b.size, axes.str(), b.size, fmt::format("({}, {})", src, dst), given()));
    }
    if (is_source[src] || source[dst] >= 0) {
      throw ValueError(
          fmt::format("ppermute sources and destinations must be unique, got {}.", given()));
    }
    is_source[src] = 1;
    source[dst] = src;
    h = internal::hash_combine(internal::hash_combine(h, src), dst);
  }
  return internal::permute_from(b, CollectiveKind::kPpermute, x, static_cast<int64_t>(h),
                                [&](int rank) { return source[rank]; });
}

Array pshuffle(const Array& x, AxisNames axes, std::vector<int> perm) {
  Bound b = internal::bind(axes, "pshuffle");
  check_mesh_order(b, axes, "pshuffle");
  if (!internal::is_permutation(perm, static_cast<int64_t>(perm.size()))) {
    throw ValueError(
        fmt::format("`perm` does not represent a permutation: [{}]", fmt::join(perm, ", ")));
  }
  if (static_cast<int64_t>(perm.size()) != b.size) {
    throw ValueError(fmt::format(
        "pshuffle `perm` has {} entries but the axes {} have {} positions; give one source per "
        "position.",
        perm.size(), axes.str(), b.size));
  }
  uint64_t h = 0x5bull;
  for (int p : perm) h = internal::hash_combine(h, static_cast<uint64_t>(p));
  return internal::permute_from(b, CollectiveKind::kPshuffle, x, static_cast<int64_t>(h),
                                [&](int rank) { return perm[rank]; });
}

Array pbroadcast(const Array& x, AxisNames axes, int source) {
  Bound b = internal::bind(axes, "pbroadcast");
  if (source < 0 || source >= b.size) {
    throw ValueError(fmt::format(
        "pbroadcast source {} is out of range for the axes {} of size {}; give a position in "
        "[0, {}).",
        source, axes.str(), b.size, b.size));
  }
  return internal::permute_from(
      b, CollectiveKind::kPbroadcast, x, source, [&](int) { return source; },
      /*same_everywhere=*/true);
}

Array all_to_all(const Array& x, AxisNames axes, int split_axis, int concat_axis,
                 AllToAllOptions options) {
  Bound b = internal::bind(axes, "all_to_all");
  if (!options.axis_index_groups.empty()) {
    for (const std::vector<int>& g : options.axis_index_groups) {
      if (g.size() != options.axis_index_groups[0].size()) {
        throw ValueError("Replica groups must be equally sized");
      }
    }
  }
  internal::check_groups(options.axis_index_groups, b.size, true, "all_to_all");
  int n = x.ndim();
  int split = internal::checked_axis(split_axis, n, "all_to_all split_axis");
  int concat = internal::checked_axis(concat_axis, n, "all_to_all concat_axis");
  int64_t g = options.axis_index_groups.empty()
                  ? b.size
                  : static_cast<int64_t>(options.axis_index_groups[0].size());
  int64_t s = x.shape()[split];
  if (!options.tiled && s != g) {
    throw ValueError(fmt::format(
        "all_to_all requires the size of the mapped axis axis_name to equal x.shape[split_axis], "
        "but they are {} and {} respectively.",
        g, s));
  }
  if (options.tiled && s % g != 0) {
    throw ValueError(fmt::format(
        "The size of all_to_all split_axis ({}) has to be divisible by the size of the named "
        "axis {} ({})",
        s, axes.str(), g));
  }
  // Local: bring the split axis to the front so that piece p is the p-th contiguous chunk.
  Array moved = internal::local(split == 0 ? x : moveaxis(x, split, 0));
  internal::OpSignature sig = internal::signature(CollectiveKind::kAllToAll, moved);
  sig.params[0] = split;
  sig.params[1] = concat;
  sig.params[2] = options.tiled;
  Array received = internal::empty_array(moved.dtype(), moved.shape());
  {
    internal::CollectiveScope scope(b, sig, options.axis_index_groups);
    int64_t chunk = g == 0 ? 0 : moved.size() / g * itemsize(moved.dtype());
    scope.comm().all_to_all(chunk, internal::data_of(moved), internal::data_of_mut(received),
                            internal::keep_of(moved), scope.cancel());
  }
  // received is [g (source), b, rest...]; rebuild the pieces' layout with the sources at concat.
  int64_t piece = s / g;
  Shape y_shape{g, piece};
  std::vector<int> rest;
  for (int d = 0; d < n; ++d) {
    if (d != split) {
      rest.push_back(d);
      y_shape.push_back(x.shape()[d]);
    }
  }
  Array y = received.reshape(y_shape);
  std::vector<int> perm;  // target dimension -> dimension of y
  Shape out_shape;
  for (int d = 0; d < n; ++d) {
    if (!options.tiled && d == split) continue;
    int src = d == split
                  ? 1
                  : 2 + static_cast<int>(std::find(rest.begin(), rest.end(), d) - rest.begin());
    perm.push_back(src);
  }
  int insert_at = concat;
  perm.insert(perm.begin() + insert_at, 0);
  if (!options.tiled) perm.push_back(1);  // the size-1 split dimension, dropped by the reshape
  for (int src : perm) out_shape.push_back(y_shape[src]);
  std::vector<int> identity(perm.size());
  std::iota(identity.begin(), identity.end(), 0);
  Array t = perm == identity ? y : transpose(y, perm);
  Shape final_shape;
  for (size_t d = 0; d < out_shape.size(); ++d) {
    if (!options.tiled && d + 1 == out_shape.size()) break;  // drop the trailing size-1 piece dim
    if (options.tiled && static_cast<int>(d) == insert_at) {
      final_shape.push_back(out_shape[d] * out_shape[d + 1]);
      ++d;
      continue;
    }
    final_shape.push_back(out_shape[d]);
  }
  return internal::typed(t.reshape(final_shape), b, internal::vma_of(x) | b.mask);
}

Array pswapaxes(const Array& x, AxisNames axes, int axis, AllToAllOptions options) {
  return all_to_all(x, std::move(axes), axis, axis, std::move(options));
}

Array axis_index(AxisNames axes) {
  Bound b = internal::bind(axes, "axis_index", /*communicates=*/false);
  if (b.vmap != nullptr) {
    return internal::typed(Array::scalar(static_cast<int32_t>(b.vmap->index())), b, 0);
  }
  int64_t pos = 0;
  const Mesh& mesh = b.ctx->call->mesh();
  for (int a : b.axes)
    pos = pos * mesh.axis_sizes()[a] + internal::coord_along(mesh, b.ctx->rank, a);
  return internal::typed(Array::scalar(static_cast<int32_t>(pos)), b, b.mask);
}

int64_t axis_size(AxisNames axes) {
  return internal::bind(axes, "axis_size", /*communicates=*/false).size;
}

Array pcast(const Array& x, AxisNames axes, To to) {
  Bound b = internal::bind(axes, "pcast", /*communicates=*/false);
  if (to == To::kReduced || to == To::kUnreduced) {
    throw NotImplementedError(
        "pcast to reduced/unreduced (JAX's unreduced types) is not "
        "supported; spmd tracks only varying/invariant");
  }
  if (to != To::kVarying) {
    throw ValueError(
        "Got unexpected `to` value. Allowed `to` values are: To::kVarying "
        "(kReduced and kUnreduced are not supported)");
  }
  // A batch axis is not tracked; without tracking every value counts as varying.
  if (b.vmap != nullptr || !b.ctx->track_vma) return x;
  uint64_t vma = internal::vma_of(x);
  uint64_t varying = vma & b.mask;
  if (varying != 0 && varying != b.mask) {
    throw ValueError(fmt::format(
        "spmd::pcast can only accept axis_name which corresponds to one of varying, unreduced, "
        "reduced or invarying state of the input. Got axes: {} of which only some are varying; "
        "cast the invarying ones only.",
        axes.str()));
  }
  if (varying == b.mask) {
    throw ValueError(fmt::format(
        "Unsupported pcast from=varying, to='varying': x already varies over {}. pcast(..., "
        "To::kVarying) (the old pvary) is an invariant->varying cast; drop it.",
        axes.str()));
  }
  return internal::with_vma(x, vma | b.mask);
}

std::vector<std::string> varying_axes(const Array& x) {
  const internal::DeviceContext* ctx = internal::current_device_context();
  std::vector<std::string> out;
  if (ctx == nullptr || !ctx->track_vma) return out;
  const uint64_t vma = internal::vma_of(x);
  const Mesh& mesh = ctx->call->mesh();
  for (int a = 0; a < mesh.ndim(); ++a) {
    if (vma >> a & 1) out.push_back(mesh.axis_names()[a]);
  }
  return out;
}

namespace internal {

Array gather_blocks(const Array& block, const PartitionSpec& spec) {
  Array out = block;
  for (size_t d = 0; d < spec.size(); ++d) {
    if (spec[d].is_none()) continue;
    out = all_gather(out, AxisNames(spec[d].names()), {.axis = static_cast<int>(d), .tiled = true});
  }
  return out;
}

}  // namespace internal
}  // namespace spmd
