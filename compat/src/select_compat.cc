// SPDX-License-Identifier: Apache-2.0
// Binds spmd::pmap to the compat shim (pmap on shard_map): the one object of library
// spmd::compat. Linking spmd::pmap_legacy instead binds it to the native legacy implementation.
#include "spmd/pmap.h"

namespace spmd::internal {

std::vector<Array> run_pmap(const PmapPlan& plan, const std::vector<Array>& args,
                            const ArgLayout& layout, BodyRef body, int num_outputs,
                            PmapCache& cache) {
  return compat::run_pmap(plan, args, layout, body, num_outputs, cache);
}

}  // namespace spmd::internal
