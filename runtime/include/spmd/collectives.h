// SPDX-License-Identifier: Apache-2.0
// File: spmd/collectives.h
//
// Collectives between the devices of a shard_map or pmap body (JAX's jax.lax parallel
// primitives). They may only be called inside a mapped body and only name the body's manual mesh
// axes; anywhere else they raise NameError ("Found an unbound axis name: i ...").
//
// Group formation follows JAX: for axis names (a_1..a_t) the devices that share their coordinates
// on every other mesh axis form one group, and a device's position in its group is the row-major
// combination of its a_s coordinates in the order the caller lists them. `axis_index_groups`
// splits each group further (positions are indices into each sub-list).
//
// Every device of a call must run the same sequence of collectives (same op, axes, dtype, shape);
// a device that does not gets CollectiveMismatch on every participant, never a hang. Each
// collective has a deadline (CollectiveTimeout). Reductions sum in rank order, so results are
// bitwise identical on every device and every run.
//
// Example (inside a shard_map body over a mesh with axis "i" of size 4):
//   Array total = spmd::psum(x, "i");
//   std::vector<Array> grads = spmd::pmean({g_w, g_b}, "i");  // one collective for both
//   Array everything = spmd::all_gather(x, "i", {.tiled = true});
//   Array shifted = spmd::ppermute(x, "i", {{0, 1}, {1, 2}, {2, 3}, {3, 0}});
//   Array parts = spmd::psum_scatter(x, "i", {.scatter_dimension = 0, .tiled = true});
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spmd/array.h"

namespace spmd {

// One mesh axis name ("i") or several ({"i", "j"}).
class AxisNames {
 public:
  AxisNames(const char* name);  // TypeError for a null pointer
  AxisNames(std::string name) : names_{std::move(name)} {}
  AxisNames(std::string_view name) : names_{std::string(name)} {}
  AxisNames(std::initializer_list<std::string_view> names);
  AxisNames(std::vector<std::string> names) : names_(std::move(names)) {}
  const std::vector<std::string>& names() const { return names_; }
  // "'i'" for one name, "('i', 'j')" for several: the form JAX prints.
  std::string str() const;

 private:
  std::vector<std::string> names_;
};

// The varying-manual-axes state a value is cast to (JAX's `to=` strings).
enum class To {
  kVarying,    // 'varying': may differ across the axes (the default for all_gather)
  kInvariant,  // 'invarying': equal across the axes (all_gather_invariant)
  kReduced,    // 'reduced': not supported (JAX's advanced unreduced/reduced types)
  kUnreduced,  // 'unreduced': not supported
};

using AxisIndexGroups = std::vector<std::vector<int>>;

struct ReduceOptions {
  // Sub-groups of group positions, each reduced independently; empty: the whole group. Must cover
  // every position exactly once, with no empty sub-group.
  AxisIndexGroups axis_index_groups;
};

struct AllGatherOptions {
  int axis = 0;          // where the gathered dimension goes (negative: from the end)
  bool tiled = false;    // concatenate along `axis` instead of stacking a new dimension
  To to = To::kVarying;  // kInvariant: the result is invariant over the axes (check_vma)
  AxisIndexGroups axis_index_groups;  // equal-sized sub-groups; empty: the whole group
};

struct PsumScatterOptions {
  int scatter_dimension = 0;  // the summed dimension that is scattered (negative: from the end)
  bool tiled = false;         // keep the dimension (size/G) instead of removing it (size G)
  AxisIndexGroups axis_index_groups;  // equal-sized sub-groups; empty: the whole group
};

struct AllToAllOptions {
  bool tiled = false;  // split/concat existing dimensions instead of removing/inserting one
  AxisIndexGroups axis_index_groups;  // equal-sized sub-groups; empty: the whole group
};

// Sum over the group (bool sums to int32).
Array psum(const Array& x, AxisNames axes, ReduceOptions options = {});
// psum(x) / group size, true division (ints give float32).
Array pmean(const Array& x, AxisNames axes, ReduceOptions options = {});
Array pmax(const Array& x, AxisNames axes, ReduceOptions options = {});
Array pmin(const Array& x, AxisNames axes, ReduceOptions options = {});

// The same over several arrays at once, as JAX reduces a pytree's leaves with one primitive: the
// arrays of each dtype travel packed in one collective (one rendezvous for a model's gradients
// instead of one per array), in the order each dtype first appears. Each result equals the
// one-array call's bit for bit and is in the position of its operand. Every device must pass the
// same dtypes and shapes in the same order (CollectiveMismatch otherwise).
//   std::vector<Array> g = spmd::pmean({g_w, g_b, loss}, "i");
std::vector<Array> psum(const std::vector<Array>& xs, AxisNames axes, ReduceOptions options = {});
std::vector<Array> pmean(const std::vector<Array>& xs, AxisNames axes, ReduceOptions options = {});
std::vector<Array> pmax(const std::vector<Array>& xs, AxisNames axes, ReduceOptions options = {});
std::vector<Array> pmin(const std::vector<Array>& xs, AxisNames axes, ReduceOptions options = {});

// For each element, the smallest group position holding the maximum (minimum) over the group, as
// int32 (JAX's pargmax / pargmin; a NaN anywhere gives INT32_MAX). Exactly one axis name.
Array pargmax(const Array& x, AxisNames axis);
Array pargmin(const Array& x, AxisNames axis);

// Untiled: stacks every position's x along a new dimension `axis`; tiled: concatenates along
// existing dimension `axis`.
Array all_gather(const Array& x, AxisNames axes, AllGatherOptions options = {});

// Sums over the group and gives position p the p-th piece of dimension `scatter_dimension`.
Array psum_scatter(const Array& x, AxisNames axes, PsumScatterOptions options = {});

// Every position receives the x of group position `source` (JAX's pbroadcast, which JAX lowers
// on GPU only). As in JAX, the result keeps x's varying axes.
Array pbroadcast(const Array& x, AxisNames axes, int source);

// Position dst receives x from position src for each (src, dst) pair; positions that are no
// destination receive zeros. Every index must be a position, in [0, group size) (ValueError
// otherwise, as in JAX); sources and destinations must each be unique.
Array ppermute(const Array& x, AxisNames axes, const std::vector<std::pair<int, int>>& perm);

// Position p receives x from position perm[p]; perm must be a permutation.
Array pshuffle(const Array& x, AxisNames axes, std::vector<int> perm);

// Position p receives piece p of every position's x split along `split_axis`, concatenated (tiled)
// or stacked (untiled) along `concat_axis` in position order.
Array all_to_all(const Array& x, AxisNames axes, int split_axis, int concat_axis,
                 AllToAllOptions options = {});

// all_to_all(x, axes, axis, axis): swaps the mapped axis with dimension `axis` (untiled).
Array pswapaxes(const Array& x, AxisNames axes, int axis, AllToAllOptions options = {});

// This device's position in its group, as an int32 scalar varying over `axes`.
Array axis_index(AxisNames axes);
// The group size (the product of the axes' sizes).
int64_t axis_size(AxisNames axes);

// Changes only the varying-manual-axes type of x (check_vma); the values are untouched.
// To::kVarying is the old pvary; the axes must not already be varying.
Array pcast(const Array& x, AxisNames axes, To to);

// The manual mesh axes x may vary over here, in mesh order (JAX's jax.typeof(x).vma): the type
// check_vma tracks. Empty outside mapped bodies and where no enclosing shard_map checks vma.
std::vector<std::string> varying_axes(const Array& x);

}  // namespace spmd
