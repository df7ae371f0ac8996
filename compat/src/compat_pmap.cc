// SPDX-License-Identifier: Apache-2.0
// The compat shim: pmap implemented on shard_map (JAX's own design since 0.8), library
// spmd::compat_impl.
//
// A pmap over axis A with in_axes/out_axes becomes a shard_map over a mesh with axis A (one axis
// per nesting level, outer major) with in_specs P(None x k, A) (P() for nullopt), check_vma off,
// and an adapter that squeezes the mapped dimension of each block and expands it back on each
// output. Where JAX's own shim is accidental, this one keeps the legacy behaviour:
//   - nested pmap works: it becomes one shard_map over all the levels' axes (pmap_common.h);
//   - negative in/out axes are normalised;
//   - sizes are checked up front with legacy's pmap-level messages (never a squeeze error);
//   - an out_axes=nullopt output whose devices disagree (JAX silently returns device 0's value)
//     is reported once per pmap call site through spmd::set_warning_handler (in a multi-process
//     run, among this process's devices).
// In a multi-process run, as in JAX's shim, the arguments (this process's slices) become global
// arrays over every process's devices and the outputs this process's part of the results.
#include <fmt/format.h>

#include <mutex>
#include <set>

#include "array_impl.h"
#include "exec/op_signature.h"
#include "pmap/pmap_common.h"
#include "spmd/make_array.h"
#include "spmd/ops.h"
#include "spmd/pmap.h"

namespace spmd::compat {
namespace {

using internal::ArgLayout;
using internal::BodyRef;
using internal::PmapLevel;
using internal::PmapPlan;

// Warns (once per call site) when an unmapped output differs across devices.
void check_unmapped(const PmapPlan& plan, const Array& output, size_t o) {
  std::vector<Shard> shards = output.addressable_shards();
  for (size_t r = 1; r < shards.size(); ++r) {
    if (array_equal(shards[r].data, shards[0].data)) continue;
    static std::mutex mu;
    static std::set<std::string> warned;
    std::lock_guard<std::mutex> lock(mu);
    if (!warned.insert(plan.call_site + "#" + std::to_string(o)).second) return;
    internal::warn(fmt::format(
        "{}: pmap '{}' output {} has out_axes=nullopt but its value differs across the '{}' axis "
        "({} differs from {}); pmap returns {}'s value (JAX does so silently). Reduce it first "
        "(psum/pmean), or map it (out_axes=0).",
        plan.call_site, plan.fun_name, o, plan.axis_name, shards[r].device.str(),
        shards[0].device.str(), shards[0].device.str()));
    return;
  }
}

// The shard_map a pmap call becomes (mesh, specs, options), cached per levels and in_axes in the
// PmapCache: building it costs a noticeable part of a small call.
std::shared_ptr<const internal::ShardMapPlan> prepare(
    const PmapPlan& plan, const std::vector<std::optional<int>>& in_axes,
    const std::vector<PmapLevel>& levels, bool probing, internal::PmapCache& cache) {
  // A probing plan may use fewer devices than the plan of the same levels once they are known.
  uint64_t key = internal::hash_combine(levels.size(), probing ? 1 : 0);
  for (const PmapLevel& l : levels) {
    key = internal::hash_combine(key, std::hash<std::string>()(l.name));
    key = internal::hash_combine(key, static_cast<uint64_t>(l.size));
  }
  for (const std::optional<int>& k : in_axes) {
    key = internal::hash_combine(key, k ? static_cast<uint64_t>(*k) : ~uint64_t{0});
  }
  {
    std::lock_guard<std::mutex> lock(cache.mu);
    if (cache.prepared && cache.prepared_key == key) {
      return std::static_pointer_cast<const internal::ShardMapPlan>(cache.prepared);
    }
  }
  Mesh mesh =
      internal::pmap::level_mesh(internal::pmap::select_devices(plan, levels, probing), levels);
  std::vector<PartitionSpec> in_specs;
  for (const std::optional<int>& k : in_axes) {
    in_specs.push_back(internal::axis_spec(k, plan.axis_name));
  }
  auto shard_plan = std::make_shared<internal::ShardMapPlan>(internal::ShardMapPlan{
      mesh, Specs(in_specs), Specs(P()),
      ShardMapOptions{.check_vma = false, .axis_names = {plan.axis_name}, .name = plan.fun_name},
      plan.fun_name});
  shard_plan->in_specs_per_leaf = true;  // in_axes are resolved per leaf
  shard_plan->ignores_context = true;    // pmap maps over its own devices
  // Outputs were expanded at their out_axis, so out_axes resolve against the stacked ranks.
  shard_plan->out_specs_from = [given = plan.options.out_axes,
                                name = plan.axis_name](const std::vector<Array>& outputs) {
    std::vector<PartitionSpec> specs;
    for (size_t o = 0; o < outputs.size(); ++o) {
      std::optional<int> k = given.size() == 1 ? given[0] : given[o];
      if (k && *k < 0) *k += outputs[o].ndim();
      specs.push_back(internal::axis_spec(k, name));
    }
    return Specs(specs);
  };
  std::lock_guard<std::mutex> lock(cache.mu);
  cache.prepared_key = key;
  cache.prepared = shard_plan;
  return shard_plan;
}

// JAX's shim in a multi-process run: the arguments hold this process's devices' slices, so
// each becomes the global array the shard_map maps (and each output the part of this process).
std::vector<Array> to_global(const PmapPlan& plan, const Mesh& mesh, const std::vector<Array>& args,
                             const std::vector<std::optional<int>>& in_axes) {
  std::vector<Array> global;
  global.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    global.push_back(host_local_array_to_global_array(
        args[i], mesh, internal::axis_spec(in_axes[i], plan.axis_name)));
  }
  return global;
}

std::vector<Array> execute(const PmapPlan& plan, const std::vector<Array>& args,
                           const ArgLayout& layout, const std::vector<std::optional<int>>& in_axes,
                           BodyRef body, const std::vector<PmapLevel>& levels, bool probing,
                           internal::PmapCache& cache) {
  std::shared_ptr<const internal::ShardMapPlan> shard_plan =
      prepare(plan, in_axes, levels, probing, cache);
  // The adapter keeps f's rank-reduced view (JAX's _fun): squeeze in, expand out.
  auto adapter = [&](const std::vector<Array>& blocks) {
    internal::pmap::LevelScope level(0);
    std::vector<Array> squeezed;
    for (size_t i = 0; i < blocks.size(); ++i) {
      squeezed.push_back(in_axes[i] ? squeeze(blocks[i], std::vector<int>{*in_axes[i]})
                                    : blocks[i]);
    }
    std::vector<Array> outputs = internal::call_body(body, squeezed);
    std::vector<std::optional<int>> out_axes = internal::pmap::resolve_out_axes(plan, outputs);
    for (size_t o = 0; o < outputs.size(); ++o) {
      if (out_axes[o]) outputs[o] = expand_dims(outputs[o], *out_axes[o]);
    }
    return outputs;
  };
  internal::BodyRef adapter_ref{&adapter,
                                [](const void* object, const std::vector<Array>& b) {
                                  return (*static_cast<const decltype(adapter)*>(object))(b);
                                },
                                /*user_code=*/false};
  const bool processes = process_count() > 1;
  std::vector<Array> results = internal::run_shard_map(
      *shard_plan, processes ? to_global(plan, shard_plan->mesh, args, in_axes) : args, layout,
      adapter_ref, /*num_outputs=*/-1);
  if (processes) {
    for (Array& r : results) {
      r = global_array_to_host_local_array(r, shard_plan->mesh, r.sharding().named().spec());
    }
  }
  const std::vector<MapAxis>& given = plan.options.out_axes;
  for (size_t o = 0; o < results.size(); ++o) {
    if (!std::optional<int>(given.size() == 1 ? given[0] : given[o])) {
      check_unmapped(plan, results[o], o);
    }
  }
  return results;
}

}  // namespace

std::vector<Array> run_pmap(const PmapPlan& plan, const std::vector<Array>& args,
                            const ArgLayout& layout, BodyRef body,
                            int /*num_outputs: counted when the body returns*/,
                            internal::PmapCache& cache) {
  return internal::pmap::run(plan, args, layout, body, cache,
                             [&](const std::vector<std::optional<int>>& in_axes,
                                 const std::vector<PmapLevel>& levels, bool probing) {
                               return execute(plan, args, layout, in_axes, body, levels, probing,
                                              cache);
                             });
}

}  // namespace spmd::compat
