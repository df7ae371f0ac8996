// SPDX-License-Identifier: Apache-2.0
// vmap of a pmap (spmd/pmap.h): JAX's batching rule for pmap, as the plans of one pmap whose
// function is vmapped on each device.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "spmd/errors.h"
#include "spmd/pmap.h"

namespace spmd::internal {
namespace {

std::string axes_str(const std::vector<std::optional<int>>& axes) {
  std::string out;
  for (const std::optional<int>& a : axes) {
    out += (out.empty() ? "" : ", ") + (a ? std::to_string(*a) : std::string("None"));
  }
  return "(" + out + ")";
}

// `vmap_axes` and `pmap_axes` as lists of one length (a one-entry list applies to every value).
std::pair<std::vector<std::optional<int>>, std::vector<std::optional<int>>> aligned(
    std::vector<std::optional<int>> vmap_axes, std::vector<std::optional<int>> pmap_axes,
    const char* what, const std::string& fun_name) {
  const size_t n = std::max(vmap_axes.size(), pmap_axes.size());
  if ((vmap_axes.size() != n && vmap_axes.size() != 1) ||
      (pmap_axes.size() != n && pmap_axes.size() != 1)) {
    throw ValueError(fmt::format(
        "vmap of the pmap of {}: the vmap's {} {} and the pmap's {} {} give different numbers of "
        "entries; give one entry for all, or one per value, in both",
        fun_name, what, axes_str(vmap_axes), what, axes_str(pmap_axes)));
  }
  vmap_axes.resize(n, vmap_axes[0]);
  pmap_axes.resize(n, pmap_axes[0]);
  for (const auto* axes : {&vmap_axes, &pmap_axes}) {
    for (const std::optional<int>& a : *axes) {
      if (a && *a < 0) {
        throw NotImplementedError(fmt::format(
            "vmap of the pmap of {} with a negative {} entry ({} for the vmap, {} for the "
            "pmap): the batching rule needs each value's rank, which the call has not given "
            "yet; write the non-negative axis",
            fun_name, what, axes_str(vmap_axes), axes_str(pmap_axes)));
      }
    }
  }
  return {std::move(vmap_axes), std::move(pmap_axes)};
}

std::vector<std::optional<int>> plain(const std::vector<MapAxis>& axes) {
  return {axes.begin(), axes.end()};
}

}  // namespace

std::pair<PmapPlan, VmapPlan> batch_pmap_plans(const PmapPlan& pmap, VmapPlan vmap) {
  PmapPlan batched = pmap;
  auto [v_in, p_in] = aligned(vmap.in_axes, plain(pmap.options.in_axes), "in_axes", pmap.fun_name);
  // The pmap maps its dimension of the batched argument (one further when the batch dimension
  // comes first); the batch dimension of a device's slice is one lower when it came after it.
  batched.options.in_axes.clear();
  for (size_t k = 0; k < v_in.size(); ++k) {
    std::optional<int> p = p_in[k];
    if (p && v_in[k] && *p >= *v_in[k]) ++*p;
    if (v_in[k] && p && *v_in[k] > *p) --*v_in[k];
    batched.options.in_axes.push_back(p);
  }
  auto [v_out, p_out] =
      aligned(vmap.out_axes, plain(pmap.options.out_axes), "out_axes", pmap.fun_name);
  // The batch lands at the vmap's out_axes entry, the pmap's axis at its own entry counted in the
  // unbatched output (one further when the batch comes before it).
  batched.options.out_axes.clear();
  for (size_t o = 0; o < v_out.size(); ++o) {
    if (!v_out[o]) {
      throw NotImplementedError(fmt::format(
          "vmap of the pmap of {} with out_axes None: give every output an integer out_axes",
          pmap.fun_name));
    }
    std::optional<int> p = p_out[o];
    if (p && *p >= *v_out[o]) ++*p;
    if (p && *v_out[o] > *p) --*v_out[o];
    batched.options.out_axes.push_back(p);
  }
  vmap.in_axes = v_in;
  vmap.out_axes = v_out;
  return {std::move(batched), std::move(vmap)};
}

}  // namespace spmd::internal
