// SPDX-License-Identifier: Apache-2.0
// The shard_map code the pmap rule writes in place of a pmap(...) expression: a lambda with the
// pmap-ed callable's call signature that builds the mesh with spmd::pmap_mesh (legacy pmap's
// argument checks and errors, then one axis per pmap level sized by the mapped dimensions or
// axis_size, over `devices` or the first devices), maps f with in_specs/out_specs derived from
// in_axes/out_axes and an adapter that squeezes the mapped dimensions of the inputs and expands the
// outputs, so f keeps its rank-reduced view. check_vma is off: pmap never checked replication.
//
// Example, for spmd::pmap(f, "i") called with one Array:
//   [f = f](const spmd::Array& a0) {
//     spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{"i"}});
//     auto block = [&](const spmd::Array& b0) {
//       return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
//     };
//     return spmd::shard_map(block, mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false})(a0);
//   }
//
// A level of an imperfect nest (a pmap that runs inside the function another pmap maps, or runs
// one inside its own, through a helper or a captured callable) runs through spmd::PmapNest, which
// discovers the inner levels' axes at run time as legacy pmap did, and its shard_map takes the
// context mesh, making only its own axes manual:
//   [f = f, nest = spmd::PmapNest()](const spmd::Array& a0) {
//     auto block = [&](const spmd::Array& b0) {
//       return spmd::expand_dims(f(spmd::squeeze(b0, 0)), 0);
//     };
//     return nest.run({a0}, {{"i"}}, [&] {
//       return spmd::shard_map(block, spmd::P("i"), spmd::P("i"),
//                              {.check_vma = false, .axis_names = {"i"}})(a0);
//     });
//   }
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace spmd::migrate {

// What the pmap-ed callable returns.
enum class OutputKind { kArray, kTuple, kVector, kVoid };

// One pmap construct, every option known and checked (pmap_rule.cc does the checking).
struct PmapSite {
  std::string fun;  // source text of the mapped function
  // One mapped axis per pmap level, outer first (nested pmap gives one multi-axis mesh).
  struct Level {
    std::string axis;       // mesh axis name (a fresh one for an unnamed pmap)
    std::string axis_size;  // source text of options.axis_size, or ""
    // Mapped dimension of each Array argument at this level, relative to the argument with the
    // outer levels' dimensions removed (pmap's view); nullopt: not mapped. Never negative.
    std::vector<std::optional<int>> in_axes;
    // Where each output's stacked dimension goes at this level; nullopt: unstacked.
    std::vector<std::optional<int>> out_axes;
  };
  std::vector<Level> levels;
  std::string devices;             // source text of the outer options.devices, or ""
  std::vector<bool> arg_is_array;  // per argument of the call, in order
  OutputKind output_kind = OutputKind::kArray;
  size_t num_outputs = 1;           // 1 for kVector (its out_axes entry applies to every element)
  std::vector<int> donate_argnums;  // positions among all arguments, as in pmap
  bool nest_level = false;  // a level of an imperfect nest: spmd::PmapNest (see the file comment)
};

// The replacement text for the pmap(...) expression. `indent` is the indentation of the line it
// starts on; continuation lines are indented from it.
std::string generate_shard_map(const PmapSite& site, const std::string& indent);

}  // namespace spmd::migrate
