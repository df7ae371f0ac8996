// SPDX-License-Identifier: Apache-2.0
// Argument checks, device choice, nested calls and donation shared by both pmap implementations
// (pmap_common.h). Messages are legacy JAX's (docs/conformance.md, C32-C45).
#include "pmap/pmap_common.h"

#include <fmt/format.h>

#include <algorithm>

#include "array_impl.h"
#include "checks.h"
#include "exec/op_signature.h"
#include "exec/processes.h"
#include "layout.h"
#include "spmd/errors.h"
#include "spmd/ops.h"

namespace spmd::internal::pmap {
namespace {

std::string axes_repr(const std::vector<MapAxis>& axes) {
  std::string out;
  for (const MapAxis& entry : axes) {
    std::optional<int> a = entry;
    out += (out.empty() ? "" : ", ") + (a ? std::to_string(*a) : std::string("None"));
  }
  return "(" + out + (axes.size() == 1 ? ",)" : ")");
}

std::string prefix_error(const char* what, size_t given, size_t leaves, const char* leaf_kind) {
  return fmt::format(
      "pytree structure error: different lengths of tuple at key path\n    pmap {}\nAt that key "
      "path, the prefix pytree pmap {} has a subtree of type tuple of length {}, but the full "
      "pytree has a subtree of the same type but of length {} (the {}). Give one entry for all of "
      "them, or one per {}.",
      what, what, given, leaves, leaf_kind, leaf_kind);
}

}  // namespace

template <class Arg>
std::vector<std::optional<int>> resolve_in_axes(const PmapPlan& plan, const std::vector<Arg>& args,
                                                const ArgLayout& layout) {
  const std::vector<MapAxis>& given = plan.options.in_axes;
  const size_t mapped_args = layout.args().size();
  if (given.size() != 1 && given.size() != mapped_args) {
    throw ValueError(
        prefix_error("in_axes", given.size(), mapped_args, "Array arguments f was called with") +
        "\nThe 'full pytree' here is the tuple of arguments passed positionally to the pmapped "
        "function, and the value of `in_axes` must be a tree prefix of that tuple. But it was not "
        "a prefix.\nCheck that the value of the `in_axes` argument to `pmap` is a tree prefix of "
        "the tuple of arguments passed positionally to the pmapped function.");
  }
  std::vector<std::optional<int>> out(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    std::optional<int> k = given.size() == 1 ? given[0] : given[layout.arg_of(i)];
    if (!k) continue;
    int rank = args[i].ndim();
    if (*k < -rank || *k >= rank) {
      throw ValueError(fmt::format(
          "pmap was requested to map its argument along axis {}, which implies that its rank "
          "should be at least {}, but is only {} (its shape is {}): {} of type {}",
          *k, *k < 0 ? -int64_t{*k} : int64_t{*k} + 1, rank, shape_tuple_string(args[i].shape()),
          layout.leaf_name(i), long_type(args[i].dtype(), args[i].shape())));
    }
    out[i] = *k < 0 ? *k + rank : *k;
  }
  return out;
}

template <class Arg>
int64_t mapped_size(const PmapPlan& plan, const std::vector<Arg>& args, const ArgLayout& layout,
                    const std::vector<std::optional<int>>& in_axes) {
  std::optional<int64_t> size;
  bool consistent = true;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!in_axes[i]) continue;
    int64_t s = args[i].shape()[*in_axes[i]];
    consistent = consistent && (!size || *size == s);
    if (!size) size = s;
  }
  if (args.empty()) {
    throw ValueError(
        "pmap wrapped function must be passed at least one argument containing an array, got no "
        "Array argument; pass the mapped values as spmd::Array arguments.");
  }
  if (!size) {
    throw ValueError(fmt::format(
        "pmap must have at least one non-None value in in_axes (got in_axes={} for {} Array "
        "arguments); map at least one argument.",
        axes_repr(plan.options.in_axes), args.size()));
  }
  if (!consistent) {
    std::vector<std::string> seen;
    for (size_t i = 0; i < args.size(); ++i) {
      if (!in_axes[i]) continue;
      seen.push_back(fmt::format("  * one axis had size {}: axis {} of {} of type {}",
                                 args[i].shape()[*in_axes[i]], *in_axes[i], layout.leaf_name(i),
                                 long_type(args[i].dtype(), args[i].shape())));
    }
    throw ValueError("pmap got inconsistent sizes for array axes to be mapped:\n" +
                     fmt::format("{}", fmt::join(seen, ";\n")));
  }
  // In a multi-process run axis_size is the global size (global_axis_size checks it).
  if (plan.options.axis_size && *plan.options.axis_size != *size && process_count() == 1) {
    throw ValueError(fmt::format("Specified axis_size {} doesn't match received axis_size {}.",
                                 *plan.options.axis_size, *size));
  }
  return *size;
}

template std::vector<std::optional<int>> resolve_in_axes(const PmapPlan&, const std::vector<Array>&,
                                                         const ArgLayout&);
template std::vector<std::optional<int>> resolve_in_axes(const PmapPlan&,
                                                         const std::vector<ArgType>&,
                                                         const ArgLayout&);
template int64_t mapped_size(const PmapPlan&, const std::vector<Array>&, const ArgLayout&,
                             const std::vector<std::optional<int>>&);
template int64_t mapped_size(const PmapPlan&, const std::vector<ArgType>&, const ArgLayout&,
                             const std::vector<std::optional<int>>&);

int64_t global_axis_size(const PmapPlan& plan, int64_t local_size) {
  const int processes = process_count();
  if (processes == 1) return local_size;
  int64_t global = 0;
  if (plan.options.devices) {
    const std::vector<Device>& given = *plan.options.devices;
    const int64_t mine = std::count_if(given.begin(), given.end(), is_addressable);
    if (mine != local_size) {
      throw ValueError(fmt::format(
          "Leading axis size of input to pmapped function must equal the number of local devices "
          "passed to pmap. Got axis_size={}, num_local_devices={}.\n(Process {} owns {} of the "
          "{} devices passed to pmap; in a multi-process run each process passes the slices of "
          "its own devices.)",
          local_size, mine, process_index(), mine, given.size()));
    }
    global = static_cast<int64_t>(given.size());
  } else {
    const int64_t local_devices = local_device_count();
    if (local_size != local_devices) {
      throw ValueError(fmt::format(
          "On multi-host platforms, the input to pmapped functions must have leading axis size "
          "equal to the number of local devices if no `devices` argument is specified. Got "
          "axis_size={}, num_local_devices={}",
          local_size, local_devices));
    }
    global = local_size * processes;
  }
  if (plan.options.axis_size && *plan.options.axis_size != global) {
    throw ValueError(fmt::format(
        "Specified axis_size {} doesn't match received axis_size {}.\n(In a multi-process run "
        "axis_size is the size over every process: {} here, {} per process.)",
        *plan.options.axis_size, global, global, local_size));
  }
  return global;
}

std::vector<std::optional<int>> resolve_out_axes(const PmapPlan& plan,
                                                 const std::vector<Array>& outputs) {
  const std::vector<MapAxis>& given = plan.options.out_axes;
  if (given.size() != 1 && given.size() != outputs.size()) {
    throw ValueError(prefix_error("out_axes", given.size(), outputs.size(), "outputs f returns"));
  }
  std::vector<std::optional<int>> out(outputs.size());
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::optional<int> k = given.size() == 1 ? given[0] : given[o];
    if (!k) continue;
    int rank = outputs[o].ndim() + 1;  // the stacked output
    if (*k < -rank || *k >= rank) {
      throw ValueError(fmt::format(
          "pmap out_axes[{}] is {}: axis {} is out of bounds for array of dimension {} (the "
          "stacked output; the body returned {}); give an axis in [{}, {}).",
          o, *k, *k, rank, long_type(outputs[o]), -rank, rank));
    }
    out[o] = *k < 0 ? *k + rank : *k;
  }
  return out;
}

namespace {

int64_t grid_size(const std::vector<PmapLevel>& levels) {
  int64_t total = 1;
  for (const PmapLevel& l : levels) total *= l.size;
  return total;
}

}  // namespace

void check_device_count(const PmapPlan& plan, const std::vector<PmapLevel>& levels) {
  int64_t total = grid_size(levels);
  if (!plan.options.devices || static_cast<int64_t>(plan.options.devices->size()) == total) {
    return;
  }
  const std::vector<Device>& given = *plan.options.devices;
  std::string names;
  for (const Device& d : given) names += (names.empty() ? "" : ", ") + d.str();
  if (levels.size() > 1) {
    throw ValueError(fmt::format(
        "pmapped function requires {} local devices to run due to nested pmapped or other "
        "parallel functions, but only {} are available.\n(outer axis size: {}, local devices "
        "available to pmap: {}); an outer pmap's devices list one device per element of the whole "
        "grid of nested axes.",
        total, given.size(), levels[0].size, names));
  }
  throw ValueError(fmt::format(
      "Leading axis size of input to pmapped function must equal the number of local devices "
      "passed to pmap. Got axis_size={}, num_local_devices={}.\n(Local devices available to "
      "pmap: {})",
      total, given.size(), names));
}

std::vector<Device> select_devices(const PmapPlan& plan, const std::vector<PmapLevel>& levels,
                                   bool probing) {
  int64_t total = grid_size(levels);
  if (process_count() > 1 && levels.size() > 1) {
    throw NotImplementedError(fmt::format(
        "nested pmap over the devices of several processes is not supported ('{}' of size {} "
        "contains a pmap over '{}'); in a multi-process run map one level with pmap, or use "
        "shard_map over a mesh with one axis per level (what spmd-migrate writes for a nest).",
        levels[0].name, levels[0].size, levels[1].name));
  }
  if (plan.options.devices) {
    check_devices(*plan.options.devices, "pmap's devices");
    std::vector<Device> given = *plan.options.devices;
    int64_t count = static_cast<int64_t>(given.size());
    // An outer pmap's devices cover the whole nest, whose inner sizes a probing call learns; the
    // count is checked once they are known.
    if (probing && count > total) {
      given.resize(static_cast<size_t>(total));
      return given;
    }
    check_device_count(plan, levels);
    return given;
  }
  std::vector<Device> all = devices();
  if (total > static_cast<int64_t>(all.size())) {
    throw ValueError(fmt::format(
        "compiling computation that requires {} logical devices, but only {} XLA devices are "
        "available (num_replicas={}). spmd has {} CPU devices: start with more "
        "(spmd::initialize({{.cpu_devices = {}}}) or SPMD_CPU_DEVICES={}), or map a smaller "
        "axis.",
        total, all.size(), total, all.size(), total, total));
  }
  all.resize(total);
  return all;
}

Mesh level_mesh(const std::vector<Device>& devices, const std::vector<PmapLevel>& levels,
                PmapCache& cache) {
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (cache.mesh && cache.mesh->devices() == devices && cache.mesh_levels == levels) {
      return *cache.mesh;
    }
  }
  Mesh mesh = level_mesh(devices, levels);
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.mesh = mesh;
  cache.mesh_levels = levels;
  return mesh;
}

Mesh level_mesh(const std::vector<Device>& devices, const std::vector<PmapLevel>& levels) {
  Shape sizes;
  std::vector<std::string> names;
  for (const PmapLevel& l : levels) {
    if (std::find(names.begin(), names.end(), l.name) != names.end()) {
      throw ValueError(fmt::format(
          "nested pmaps must map distinct axis names, but '{}' is used by two levels", l.name));
    }
    sizes.push_back(l.size);
    names.push_back(l.name);
  }
  return Mesh(devices, sizes, names);
}

LevelScope::LevelScope(int mesh_axis)
    : ctx_(current_device_context()), saved_bound_(ctx_->bound), saved_depth_(ctx_->pmap_depth) {
  ctx_->bound |= uint64_t{1} << mesh_axis;
  ctx_->pmap_depth = mesh_axis + 1;
}

LevelScope::~LevelScope() {
  ctx_->bound = saved_bound_;
  ctx_->pmap_depth = saved_depth_;
}

std::vector<Array> run_nested(const PmapPlan& plan, const std::vector<Array>& args,
                              const ArgLayout& layout, BodyRef body) {
  DeviceContext* ctx = current_device_context();
  if (ctx->pmap_depth == 0) {
    throw ValueError(fmt::format(
        "pmap(axis_name='{}') was called inside the body of shard_map '{}': map that axis with "
        "the enclosing shard_map's mesh instead",
        plan.axis_name, ctx->call->fun_name()));
  }
  if (plan.options.devices) throw ValueError("Nested pmap with explicit devices argument.");
  std::vector<std::optional<int>> in_axes = resolve_in_axes(plan, args, layout);
  int64_t size = mapped_size(plan, args, layout, in_axes);
  const Mesh& mesh = ctx->call->mesh();
  const int axis = ctx->pmap_depth;
  if (axis >= mesh.ndim()) throw NestedDiscovery{{}, PmapLevel{plan.axis_name, size}};
  if (mesh.axis_names()[axis] != plan.axis_name || mesh.axis_sizes()[axis] != size) {
    throw ValueError(fmt::format(
        "this nested pmap maps axis '{}' of size {}, but earlier calls with the same argument "
        "types reached a nested pmap over '{}' of size {}; nested pmaps must have the same "
        "structure on every call",
        plan.axis_name, size, mesh.axis_names()[axis], mesh.axis_sizes()[axis]));
  }
  const int64_t index = coord_along(mesh, ctx->rank, axis);
  std::vector<Array> blocks;
  for (size_t i = 0; i < args.size(); ++i) {
    blocks.push_back(in_axes[i] ? take(args[i], index, *in_axes[i]) : args[i]);
  }
  LevelScope scope(axis);
  std::vector<Array> outputs = call_body(body, blocks);
  std::vector<std::optional<int>> out_axes = resolve_out_axes(plan, outputs);
  // Every device needs the stacked result, as the outer body saw it in JAX.
  for (size_t o = 0; o < outputs.size(); ++o) {
    Array gathered = all_gather(outputs[o], plan.axis_name, {.axis = out_axes[o].value_or(0)});
    outputs[o] = out_axes[o] ? gathered : take(gathered, 0, 0);
  }
  return outputs;
}

int64_t local_coord(const Mesh& mesh, int rank) {
  if (process_count() == 1) return coord_along(mesh, rank, 0);
  // Nested levels are refused across processes, so the mesh has one axis.
  const std::vector<Device>& devices = mesh.devices();
  return std::count_if(devices.begin(), devices.begin() + rank, is_addressable);
}

uint64_t cache_key(const std::vector<Array>& args) {
  uint64_t key = args.size();
  for (const Array& a : args) {
    key = hash_combine(key, static_cast<uint64_t>(a.dtype()));
    key = hash_combine(key, a.shape().size());
    for (int64_t d : a.shape()) key = hash_combine(key, static_cast<uint64_t>(d));
  }
  return key;
}

std::optional<std::vector<PmapLevel>> cached_levels(PmapCache& cache, uint64_t key) {
  std::lock_guard<std::mutex> lock(cache.mu);
  for (const auto& [k, levels] : cache.inner_levels) {
    if (k == key) return levels;
  }
  return std::nullopt;
}

void remember_levels(PmapCache& cache, uint64_t key, const std::vector<PmapLevel>& levels) {
  std::lock_guard<std::mutex> lock(cache.mu);
  for (auto& [k, l] : cache.inner_levels) {
    if (k == key) {
      l = levels;
      return;
    }
  }
  cache.inner_levels.emplace_back(key, levels);
}

}  // namespace spmd::internal::pmap
