// SPDX-License-Identifier: Apache-2.0
// shard_map: validation with JAX's messages, block formation, launch, and output assembly with
// the check_vma test (spmd/shard_map.h).
#include "spmd/shard_map.h"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <typeindex>
#include <unordered_map>

#include "array_impl.h"
#include "checks.h"
#include "collectives_internal.h"
#include "exec/launch.h"
#include "layout.h"
#include "mesh_context_internal.h"
#include "spmd/collectives.h"
#include "spmd/errors.h"
#include "spmd/mesh_context.h"
#include "vmap_internal.h"

namespace spmd {

namespace {
template <class T>
std::string list_str(const std::vector<T>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i].str();
  return out + "]";
}
}  // namespace

std::string SpecEntry::str() const { return per_element_ ? list_str(specs_) : specs_[0].str(); }

std::string Specs::str() const { return single_ ? entries_[0].str() : list_str(entries_); }

namespace internal {
namespace {

std::string mesh_line(const Mesh& mesh) {
  return fmt::format("The mesh given has shape {} with corresponding axis names {}.",
                     mesh.sizes_str(), mesh.names_str());
}

std::string axes_set(const Mesh& mesh, uint64_t mask) {
  std::string out;
  for (int a = 0; a < mesh.ndim(); ++a) {
    if (mask >> a & 1) out += fmt::format("{}'{}'", out.empty() ? "" : ", ", mesh.axis_names()[a]);
  }
  return "{" + out + "}";
}

// One spec of the call and where it was given ("in_specs", "in_specs[1]", "in_specs[1][0]"). It
// points into the plan and forms the path only for a message: every call expands the specs.
struct SpecAt {
  const PartitionSpec* spec;
  const char* what;  // "in_specs" or "out_specs"
  int i = -1;        // the index into the list of specs, -1 for a single spec
  int k = -1;        // the element of a per-element list, -1 if none
  std::string path() const {
    if (i < 0) return what;
    return k < 0 ? fmt::format("{}[{}]", what, i) : fmt::format("{}[{}][{}]", what, i, k);
  }
};

std::string prefix_error(const char* what, size_t given, size_t wanted, const char* kind) {
  return fmt::format(
      "pytree structure error: different lengths of tuple at key path\n    shard_map {}\nAt "
      "that key path, the prefix pytree shard_map {} has a subtree of type list of length {}, "
      "but the full pytree has a subtree of the same type but of length {} (the {}). Give one "
      "entry per {}, or a single PartitionSpec for all of them.",
      what, what, given, wanted, kind, kind);
}

// The spec of each Array leaf of the call: one spec for all, one entry per mapped argument (a
// PartitionSpec for all of a container's elements, or a list with one per element), or, for the
// compat pmap, one spec per leaf.
std::vector<SpecAt> expand_in_specs(const ShardMapPlan& plan, const ArgLayout& layout) {
  const Specs& specs = plan.in_specs;
  const std::vector<SpecEntry>& entries = specs.entries();
  std::vector<SpecAt> out;
  out.reserve(layout.leaf_count());
  if (specs.is_single() || plan.in_specs_per_leaf) {
    if (!specs.is_single() && entries.size() != layout.leaf_count()) {
      throw ValueError(prefix_error("in_specs", entries.size(), layout.leaf_count(),
                                    "Array arguments f was called with"));
    }
    for (size_t i = 0; i < layout.leaf_count(); ++i) {
      out.push_back(specs.is_single() ? SpecAt{&entries[0].specs()[0], "in_specs"}
                                      : SpecAt{&entries[i].specs()[0], "in_specs", int(i)});
    }
    return out;
  }
  if (entries.size() != layout.args().size()) {
    throw ValueError(prefix_error("in_specs", entries.size(), layout.args().size(),
                                  "Array, std::vector<Array> and std::tuple arguments f was "
                                  "called with"));
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    const SpecEntry& entry = entries[i];
    const ArgLayout::Arg& arg = layout.args()[i];
    if (!entry.per_element()) {
      for (size_t k = 0; k < arg.count; ++k) {
        out.push_back({&entry.specs()[0], "in_specs", int(i)});
      }
      continue;
    }
    if (!arg.container || entry.specs().size() != arg.count) {
      throw ValueError(fmt::format(
          "shard_map in_specs[{}] is {}, a list of {} PartitionSpecs, but args[{}] is {}. A list "
          "gives one PartitionSpec per element of a std::vector<Array> or std::tuple argument; "
          "give a single PartitionSpec to apply it to the whole argument.",
          i, entry.str(), entry.specs().size(), arg.position,
          arg.container ? fmt::format("a container of {} Arrays", arg.count) : "an Array"));
    }
    for (size_t k = 0; k < arg.count; ++k) {
      out.push_back({&entry.specs()[k], "in_specs", int(i), int(k)});
    }
  }
  return out;
}

// The spec of each output: one spec for all, or one per output.
std::vector<SpecAt> expand_out_specs(const Specs& specs, size_t outputs) {
  const std::vector<SpecEntry>& entries = specs.entries();
  for (size_t j = 0; j < entries.size(); ++j) {
    if (entries[j].per_element()) {
      throw ValueError(fmt::format(
          "shard_map out_specs[{}] is the list {}, but outputs are Arrays: give one "
          "PartitionSpec per output (a std::vector<Array> or std::tuple result has one output "
          "per element).",
          j, entries[j].str()));
    }
  }
  if (specs.is_single()) return std::vector<SpecAt>(outputs, {&entries[0].specs()[0], "out_specs"});
  if (entries.size() != outputs) {
    throw ValueError(prefix_error("out_specs", entries.size(), outputs, "outputs f returns"));
  }
  std::vector<SpecAt> out;
  out.reserve(outputs);
  for (size_t j = 0; j < outputs; ++j) out.push_back({&entries[j].specs()[0], "out_specs", int(j)});
  return out;
}

// Checks that a spec names only mesh axes that are manual in this call, each at most once.
void check_spec_names(const ShardMapPlan& plan, uint64_t manual, const SpecAt& at) {
  const Mesh& mesh = plan.mesh;
  const PartitionSpec& spec = *at.spec;
  const char* what = at.what;
  for (const PartitionSpec::Entry& entry : spec.entries()) {
    for (const std::string& name : entry.names()) {
      int a = mesh.axis_index(name);
      if (a < 0) {
        throw ValueError(fmt::format(
            "shard_map {} is {}, which refers to axis '{}' that is not in the mesh. {} Check the "
            "{} values passed to shard_map.",
            at.path(), spec.str(), name, mesh_line(mesh), what));
      }
      if (!(manual >> a & 1)) {
        throw ValueError(fmt::format(
            "shard_map {} argument must refer to an axis marked as manual ({}), but:\n\n  {} "
            "refers to '{}'\n\nCheck the {} values passed to shard_map.",
            what, axes_set(mesh, manual), at.path(), name, what));
      }
    }
  }
  check_spec_axes(mesh, spec);
}

uint64_t manual_mask(const ShardMapPlan& plan) {
  const Mesh& mesh = plan.mesh;
  if (plan.options.axis_names.empty()) return (uint64_t{1} << mesh.ndim()) - 1;
  uint64_t mask = 0;
  for (const std::string& name : plan.options.axis_names) {
    int a = mesh.axis_index(name);
    if (a < 0) {
      std::string given;
      for (const std::string& n : plan.options.axis_names) {
        given += fmt::format("{}'{}'", given.empty() ? "" : ", ", n);
      }
      throw ValueError(
          fmt::format("shard_map requires axis_names={{{}}} to be a subset of mesh.axis_names={}",
                      given, mesh.names_str()));
    }
    mask |= uint64_t{1} << a;
  }
  return mask;
}

uint64_t spec_mask(const Mesh& mesh, const PartitionSpec& spec) {
  uint64_t mask = 0;
  for (const PartitionSpec::Entry& entry : spec.entries()) {
    for (const std::string& name : entry.names()) mask |= uint64_t{1} << mesh.axis_index(name);
  }
  return mask;
}

// Validates the inputs against their specs, collecting every divisibility failure like JAX.
void check_inputs(const ShardMapPlan& plan, const std::vector<Array>& args, const ArgLayout& layout,
                  const std::vector<SpecAt>& specs) {
  const Mesh& mesh = plan.mesh;
  const std::string& f = plan.fun_name;
  std::vector<std::string> failures;
  for (size_t i = 0; i < args.size(); ++i) {
    const PartitionSpec& spec = *specs[i].spec;
    int rank = args[i].ndim();
    if (static_cast<int>(spec.size()) > rank) {
      throw ValueError(fmt::format(
          "shard_map applied to the function '{}' was given an in_specs entry which is too long "
          "to be compatible with the corresponding input value from the function:\n\n{} is {} "
          "which has length {}, but the passed {} has shape {}, which has rank {} (and {} "
          "< {})\n\nEntries in in_specs must be of length no greater than the number of axes in "
          "the corresponding input value.\n\nEither revise the spec to be shorter, or modify '{}' "
          "so that its inputs have sufficient rank.{}",
          f, specs[i].path(), spec.str(), spec.size(), layout.leaf_name(i), long_type(args[i]),
          rank, rank, spec.size(), f,
          rank == 0 ? "\n\nFor scalar values (rank 0), consider using an in_specs entry of `P()`, "
                      "where `P = spmd::PartitionSpec`."
                    : ""));
    }
    for (size_t d = 0; d < spec.size(); ++d) {
      if (spec[d].is_none()) continue;
      int64_t m = entry_size(mesh, spec[d]);
      int64_t size = args[i].shape()[d];
      if (size % m == 0) continue;
      std::string target = spec[d].is_tuple()
                               ? fmt::format("mesh axes {} (of total size {})", spec[d].str(), m)
                               : fmt::format("mesh axis '{}' (of size {})", spec[d].names()[0], m);
      failures.push_back(
          fmt::format("* the passed {} of shape {} corresponds to {} of value {}, which maps array "
                      "axis {} (of size {}) to {}, but {} does not evenly divide {}",
                      layout.leaf_name(i), long_type(args[i]), specs[i].path(), spec.str(), d, size,
                      target, m, size));
    }
  }
  if (failures.empty()) return;
  if (failures.size() == 1) failures[0] = failures[0].substr(2);
  throw ValueError(fmt::format(
      "shard_map applied to the function '{}' was given argument arrays with axis sizes that are "
      "not evenly divisible by the corresponding mesh axis sizes:\n\n{}\n\n{}\n\nArray arguments' "
      "axis sizes must be evenly divisible by the mesh axis or axes indicated by the "
      "corresponding elements of the argument's in_specs entry. Consider checking that in_specs "
      "are correct, and if so consider changing the mesh axis sizes or else padding the input "
      "and adapting '{}' appropriately.",
      f, mesh_line(mesh), fmt::join(failures, "\n\n"), f));
}

void check_vma(const ShardMapPlan& plan, uint64_t manual, const SpecAt& at, uint64_t vma) {
  const Mesh& mesh = plan.mesh;
  const PartitionSpec& spec = *at.spec;
  uint64_t mentioned = spec_mask(mesh, spec);
  uint64_t unmentioned = manual & ~mentioned;
  if ((vma & unmentioned) == 0) return;
  std::string detail;
  if (__builtin_popcountll(unmentioned) == 1) {
    detail = fmt::format(
        "{} is {} which implies that the corresponding output value is replicated across mesh "
        "axis '{}', but could not infer replication over any axes",
        at.path(), spec.str(), mesh.axis_names()[__builtin_ctzll(unmentioned)]);
  } else {
    auto plain = [&](uint64_t mask) {
      std::string s = axes_set(mesh, mask);
      s.erase(std::remove(s.begin(), s.end(), '\''), s.end());
      s.erase(std::remove(s.begin(), s.end(), ' '), s.end());
      return s;
    };
    detail = fmt::format(
        "{} is {} which implies that the corresponding output value is only varying across mesh "
        "axes {} and not {}, but it was inferred to be possibly varying over {}",
        at.path(), spec.str(), plain(mentioned), plain(unmentioned & vma), plain(vma));
  }
  throw ValueError(fmt::format(
      "shard_map applied to the function '{}' was given out_specs which require replication "
      "which can't be statically inferred given the mesh:\n\n{}\n\n{}\n\nCheck if these output "
      "values are meant to be replicated over those mesh axes. If not, consider revising the "
      "corresponding out_specs entries. If so, consider disabling the check by passing the "
      "check_vma=false option (ShardMapOptions{{.check_vma = false}}) to `spmd::shard_map`. If "
      "the value comes from an all_gather over those axes, all_gather(x, axis, {{.to = "
      "spmd::To::kInvariant}}) (JAX's all_gather_invariant) makes it replicated and keeps the "
      "check.",
      plan.fun_name, mesh_line(mesh), detail));
}

// ValueError unless output j (`first`, one device's) has at least the rank of its out_spec.
void check_out_rank(const ShardMapPlan& plan, const SpecAt& at, const Array& first, size_t j) {
  const PartitionSpec& spec = *at.spec;
  int rank = first.ndim();
  if (static_cast<int>(spec.size()) <= rank) return;
  throw ValueError(fmt::format(
      "shard_map applied to the function '{}' was given an out_specs entry which is too long to "
      "be compatible with the corresponding output value from the function:\n\n{} is {} which "
      "has length {}, but {}(*args){} has shape {}, which has rank {} (and {} < {})\n\nEntries "
      "in out_specs must be of length no greater than the number of axes in the corresponding "
      "output value.\n\nEither revise the spec to be shorter, or modify '{}' so that its "
      "outputs have sufficient rank.{}",
      plan.fun_name, at.path(), spec.str(), spec.size(), plan.fun_name,
      plan.out_specs.is_single() ? "" : fmt::format("[{}]", j), long_type(first), rank, rank,
      spec.size(), plan.fun_name,
      rank == 0 ? " In particular, for rank 0 outputs which are not constant over the mesh, "
                  "add at least one (singleton) axis to them so that they can be concatenated "
                  "using out_specs."
                : ""));
}

// Builds output j from every device's block.
Array assemble_output(const ShardMapPlan& plan, const CallSpec& call, const SpecAt& at,
                      const DeviceOutputs& outputs, size_t j) {
  const PartitionSpec& spec = *at.spec;
  check_same_types(call, outputs, j);
  const Array& first = outputs[0][j];
  uint64_t vma = 0;
  for (const std::vector<Array>& device_outputs : outputs) vma |= vma_of(device_outputs[j]);
  check_out_rank(plan, at, first, j);
  if (plan.options.check_vma) check_vma(plan, call.manual_mask, at, vma);
  Shape global = first.shape();
  for (size_t d = 0; d < spec.size(); ++d) global[d] *= entry_size(plan.mesh, spec[d]);
  return assemble(call, spec, global, first.shape(), outputs, j);
}

// Checks out_specs' axis names; returns the spec of each output when their count is known (>= 0).
std::vector<SpecAt> check_out_specs(const ShardMapPlan& plan, uint64_t manual,
                                    const Specs& out_specs, int num_outputs) {
  const std::vector<SpecEntry>& entries = out_specs.entries();
  for (size_t j = 0; j < entries.size(); ++j) {
    for (const PartitionSpec& spec : entries[j].specs()) {
      check_spec_names(plan, manual, {&spec, "out_specs", out_specs.is_single() ? -1 : int(j)});
    }
  }
  if (num_outputs < 0) return {};
  return expand_out_specs(out_specs, static_cast<size_t>(num_outputs));
}

// A mesh given to shard_map inside a mapped body, where the context mesh has manual axes.
std::string context_mesh_error(const Mesh& mesh, const DeviceContext& ctx) {
  return fmt::format(
      "The context mesh {} should match the mesh passed to shard_map {}: shard_map was called "
      "inside the body of '{}', whose mesh axes {} are manual there. {}",
      get_abstract_mesh().str(), mesh.str(), ctx.call->fun_name(),
      axes_set(ctx.call->mesh(), ctx.bound),
      ctx.pmap_depth > 0
          ? "Inside a pmap body, map every axis with pmap, or migrate the nest to one "
            "multi-axis shard_map (what spmd-migrate writes)."
          : "Leave the mesh out (spmd::shard_map(f, in_specs, out_specs, options)) to map over "
            "the axes still automatic in the context mesh, or map over one mesh that has every "
            "axis.");
}

// The mesh a top-level call maps over: the plan's, which must match a context mesh, or the
// context mesh.
const Mesh& top_level_mesh(const ShardMapPlan& plan) {
  if (plan.ignores_context) return plan.mesh;
  const Mesh* context = thread_context_mesh();
  if (plan.mesh_from_context) {
    if (context == nullptr) {
      throw ValueError(
          "The context mesh cannot be empty. Use `spmd::use_mesh(mesh)` (or `spmd::set_mesh`) to "
          "enter into a mesh context, or pass a mesh to shard_map.");
    }
    return *context;
  }
  if (context != nullptr && AbstractMesh(*context, 0) != AbstractMesh(plan.mesh, 0)) {
    throw ValueError(fmt::format(
        "The context mesh {} should match the mesh passed to shard_map {}. Leave the mesh out to "
        "map over the context mesh, or call shard_map outside the spmd::use_mesh scope.",
        AbstractMesh(*context, 0).str(), plan.mesh.str()));
  }
  return plan.mesh;
}

// ValueError when a nested call's spec names an axis the enclosing body already made manual:
// the values there are already split over it.
void check_fresh(const ShardMapPlan& plan, const DeviceContext& ctx, uint64_t outer, uint64_t fresh,
                 const SpecAt& at) {
  const uint64_t already = outer & spec_mask(plan.mesh, *at.spec);
  if (already == 0) return;
  throw ValueError(fmt::format(
      "shard_map {} is {}, which refers to axis '{}', but that axis is already manual in the "
      "enclosing body of '{}' (the context mesh is {}): the values there are already split over "
      "it. Name only axes this shard_map makes manual, {}.",
      at.path(), at.spec->str(), plan.mesh.axis_names()[__builtin_ctzll(already)],
      ctx.call->fun_name(), AbstractMesh(plan.mesh, outer).str(), axes_set(plan.mesh, fresh)));
}

// Makes axes `bound` nameable and sets vma tracking for the lifetime of a nested call's body.
class NestedScope {
 public:
  NestedScope(DeviceContext& ctx, uint64_t bound, bool track_vma)
      : ctx_(ctx), bound_(ctx.bound), track_vma_(ctx.track_vma) {
    ctx.bound = bound;
    ctx.track_vma = track_vma;
  }
  ~NestedScope() {
    ctx_.bound = bound_;
    ctx_.track_vma = track_vma_;
  }
  NestedScope(const NestedScope&) = delete;
  NestedScope& operator=(const NestedScope&) = delete;

 private:
  DeviceContext& ctx_;
  uint64_t bound_;
  bool track_vma_;
};

// A nested call's output on this device: checked against its out_spec over the `fresh` axes, then
// gathered over them, so that every device holds the whole value (the outer body saw it whole in
// JAX). Without check_vma, axes the spec leaves out take the value of their first device.
Array gather_output(const ShardMapPlan& plan, const SpecAt& at, Array out, uint64_t fresh,
                    size_t j) {
  const PartitionSpec& spec = *at.spec;
  const Mesh& mesh = plan.mesh;
  check_out_rank(plan, at, out, j);
  const uint64_t unmentioned = fresh & ~spec_mask(mesh, spec);
  if (plan.options.check_vma) {
    check_vma(plan, fresh, at, vma_of(out));
  } else if (unmentioned != 0) {
    std::vector<std::string> names;
    for (int a = 0; a < mesh.ndim(); ++a) {
      if (unmentioned >> a & 1) names.push_back(mesh.axis_names()[a]);
    }
    out = pbroadcast(out, std::move(names), 0);
  }
  return gather_blocks(out, spec);
}

// A shard_map called inside a mapped body (see the shard_map overload without a mesh): on this
// device, over the context mesh's axes `options.axis_names` (default: all) that are not manual yet.
std::vector<Array> run_nested(const ShardMapPlan& given, std::vector<Array> args,
                              const ArgLayout& layout, BodyRef body, int num_outputs,
                              DeviceContext& ctx) {
  if (ctx.pmap_depth > 0 || !given.mesh_from_context) {
    throw ValueError(context_mesh_error(given.mesh, ctx));
  }
  if (current_vmap_frame() != nullptr) {
    throw NotImplementedError(fmt::format(
        "a shard_map inside a vmap with an axis_name ('{}') inside the body of '{}': the batch "
        "elements run on threads of their own, and a nested call needs the device's. Drop the "
        "vmap's axis_name (its elements then run in a loop) or vmap the shard_map itself.",
        current_vmap_frame()->axis_name(), ctx.call->fun_name()));
  }
  if (given.options.collective_timeout_s) {
    throw NotImplementedError(fmt::format(
        "ShardMapOptions::collective_timeout_s was given to a shard_map nested inside the body "
        "of '{}': the collectives of a nested call wait under the enclosing call's deadline. Set "
        "the timeout on the outermost shard_map.",
        ctx.call->fun_name()));
  }
  ShardMapPlan plan = given;
  plan.mesh = ctx.call->mesh();
  const Mesh& mesh = plan.mesh;
  const uint64_t outer = ctx.bound;
  const uint64_t named = manual_mask(plan);
  const uint64_t fresh = named & ~outer;
  std::vector<SpecAt> in_specs = expand_in_specs(plan, layout);
  for (const SpecAt& leaf : in_specs) {
    check_spec_names(plan, named, leaf);
    check_fresh(plan, ctx, outer, fresh, leaf);
  }
  std::vector<SpecAt> out_specs = check_out_specs(plan, named, plan.out_specs, num_outputs);
  for (const SpecAt& at : out_specs) check_fresh(plan, ctx, outer, fresh, at);
  check_inputs(plan, args, layout, in_specs);
  check_donation(plan.options.donate_argnums, layout.leaf_positions());

  // Values the enclosing body did not track count as varying over all its manual axes.
  const bool tracked = ctx.track_vma;
  const bool track = tracked || plan.options.check_vma;
  std::vector<Array> blocks;
  blocks.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const PartitionSpec& spec = *in_specs[i].spec;
    const uint64_t vma = track ? (tracked ? vma_of(args[i]) : outer) | spec_mask(mesh, spec) : 0;
    blocks.push_back(with_vma(make_block(mesh, args[i], spec, ctx.rank, ctx.device), vma));
  }
  std::vector<Array> results;
  {
    NestedScope scope(ctx, outer | named, track);
    std::vector<Array> outputs = call_body(body, blocks);
    if (num_outputs < 0) {
      for (const SpecAt& at : expand_out_specs(plan.out_specs, outputs.size())) {
        check_fresh(plan, ctx, outer, fresh, at);
        out_specs.push_back(at);
      }
    }
    for (size_t j = 0; j < outputs.size(); ++j) {
      Array out = gather_output(plan, out_specs[j], std::move(outputs[j]), fresh, j);
      // Back in the enclosing body the value varies over its manual axes only (JAX's rule).
      const uint64_t vma = tracked ? vma_of(out) & outer : 0;
      results.push_back(with_vma(std::move(out), vma));
    }
  }
  donate(plan.options.donate_argnums, args, layout.leaf_positions());
  return results;
}

}  // namespace

PartitionSpec axis_spec(std::optional<int> axis, const std::string& name) {
  if (!axis) return P();
  if (*axis < 0) {
    throw ValueError(fmt::format("axis {} for mesh axis '{}' must be non-negative", *axis, name));
  }
  std::vector<PartitionSpec::Entry> entries(static_cast<size_t>(*axis), PartitionSpec::Entry(None));
  entries.emplace_back(name);
  return PartitionSpec(std::move(entries));
}

namespace {

// Whether a demangled type name is a lambda's: "f()::{lambda(int)#1}" (GCC; Clang in an inline
// function) or "f()::$_3" (Clang's name for an unnamed local type with internal linkage).
bool is_lambda(std::string_view name) {
  if (name.find("{lambda(") != std::string_view::npos) return true;
  size_t last = name.rfind("::");
  return name.substr(last == std::string_view::npos ? 0 : last + 2).starts_with("$_");
}

}  // namespace

std::string type_name(const std::type_info& type) {
  // Demangling costs more than a whole call of a small mapped function, and a program that builds
  // its mapped functions in a loop names the same few types again and again: each is demangled
  // once. Never destroyed: a worker thread may name an exception during static destruction.
  static std::mutex mu;
  static auto* names = new std::unordered_map<std::type_index, std::string>();
  std::lock_guard<std::mutex> lock(mu);
  auto [it, fresh] = names->try_emplace(std::type_index(type));
  if (!fresh) return it->second;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> demangled(
      abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
  std::string name = status == 0 ? demangled.get() : type.name();
  if (is_lambda(name)) name = "<lambda>";
  if (name.find("(*)(") != std::string::npos) name = "<function>";
  it->second = name;
  return name;
}

std::string callable_name(const std::type_info& type, const char* file, int line) {
  return fmt::format("{} at {}:{}", type_name(type), file, line);
}

void ArgLayout::add(int position, size_t count, bool container) {
  args_.push_back({position, leaf_positions_.size(), count, container});
  leaf_positions_.insert(leaf_positions_.end(), count, position);
}

size_t ArgLayout::arg_of(size_t leaf) const {
  size_t a = 0;
  while (a + 1 < args_.size() && args_[a + 1].first <= leaf) ++a;
  return a;
}

std::string ArgLayout::leaf_name(size_t leaf) const {
  const Arg& arg = args_[arg_of(leaf)];
  return arg.container ? fmt::format("args[{}][{}]", arg.position, leaf - arg.first)
                       : fmt::format("args[{}]", arg.position);
}

namespace {

// A top-level call: validates, launches every device's body and assembles the outputs.
std::vector<Array> run_top_level(const ShardMapPlan& plan, std::vector<Array> args,
                                 const ArgLayout& layout, BodyRef body, int num_outputs) {
  const Mesh& mesh = plan.mesh;
  if (mesh.empty()) {
    throw ValueError(
        fmt::format("shard_map requires a non-empty mesh. Got {}. Build one with spmd::make_mesh.",
                    mesh.str()));
  }
  uint64_t manual = manual_mask(plan);
  std::vector<SpecAt> in_specs = expand_in_specs(plan, layout);
  for (const SpecAt& leaf : in_specs) check_spec_names(plan, manual, leaf);
  std::vector<SpecAt> out_specs;
  if (!plan.out_specs_from) out_specs = check_out_specs(plan, manual, plan.out_specs, num_outputs);
  check_inputs(plan, args, layout, in_specs);
  check_donation(plan.options.donate_argnums, layout.leaf_positions());

  const std::optional<double>& timeout = plan.options.collective_timeout_s;
  CallSpec call{mesh,
                manual,
                plan.options.check_vma,
                timeout ? checked_timeout(*timeout, "ShardMapOptions::collective_timeout_s")
                        : collective_timeout_s(),
                plan.fun_name,
                thread_discovers_nest(),
                reinterpret_cast<const void*>(body.call)};
  DeviceOutputs outputs = launch(call, [&](DeviceContext& ctx) {
    std::vector<Array> blocks;
    blocks.reserve(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const PartitionSpec& spec = *in_specs[i].spec;
      const uint64_t vma = plan.options.check_vma ? spec_mask(mesh, spec) : 0;
      blocks.push_back(with_vma(make_block(mesh, args[i], spec, ctx.rank, ctx.device), vma));
    }
    return call_body(body, blocks);
  });

  const size_t count = outputs[0].size();
  std::optional<Specs> from_outputs;  // out_specs computed from the outputs (out_specs points in)
  if (plan.out_specs_from) {
    from_outputs = plan.out_specs_from(outputs[0]);
    out_specs = check_out_specs(plan, manual, *from_outputs, static_cast<int>(count));
  } else if (num_outputs < 0) {
    out_specs = expand_out_specs(plan.out_specs, count);
  }
  std::vector<Array> results;
  results.reserve(count);
  for (size_t j = 0; j < count; ++j) {
    results.push_back(assemble_output(plan, call, out_specs[j], outputs, j));
  }
  donate(plan.options.donate_argnums, args, layout.leaf_positions());
  return results;
}

}  // namespace

std::vector<Array> run_shard_map(const ShardMapPlan& plan, std::vector<Array> args,
                                 const ArgLayout& layout, BodyRef body, int num_outputs) {
  if (DeviceContext* ctx = current_device_context()) {
    return run_nested(plan, std::move(args), layout, body, num_outputs, *ctx);
  }
  const Mesh& mesh = top_level_mesh(plan);
  if (!plan.mesh_from_context)
    return run_top_level(plan, std::move(args), layout, body, num_outputs);
  ShardMapPlan resolved = plan;
  resolved.mesh = mesh;
  return run_top_level(resolved, std::move(args), layout, body, num_outputs);
}

Specs smap_specs(const std::vector<std::optional<int>>& axes, const std::string& axis_name) {
  std::vector<PartitionSpec> specs;
  specs.reserve(axes.size());
  for (const std::optional<int>& a : axes) specs.push_back(axis_spec(a, axis_name));
  return specs.size() == 1 ? Specs(specs[0]) : Specs(std::move(specs));
}

}  // namespace internal
}  // namespace spmd
