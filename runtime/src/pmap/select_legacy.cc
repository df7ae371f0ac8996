// SPDX-License-Identifier: Apache-2.0
// Binds spmd::pmap to the native legacy implementation: the one object of library
// spmd::pmap_legacy. Linking spmd::compat instead binds it to the shard_map-based shim.
#include "spmd/pmap.h"

namespace spmd::internal {

std::vector<Array> run_pmap(const PmapPlan& plan, const std::vector<Array>& args,
                            const ArgLayout& layout, BodyRef body, int num_outputs,
                            PmapCache& cache) {
  return legacy::run_pmap(plan, args, layout, body, num_outputs, cache);
}

}  // namespace spmd::internal
