// SPDX-License-Identifier: Apache-2.0
// spmd::process_allgather (spmd/distributed.h): the global value of an array in every process,
// gathered with the collectives of one shard_map over the array's mesh.
#include <fmt/format.h>

#include "spmd/collectives.h"
#include "spmd/distributed.h"
#include "spmd/shard_map.h"

namespace spmd {

Array process_allgather(const Array& x) {
  if (!x.sharding().is_named()) return x;  // one device: every process that holds it has it all
  const NamedSharding& sharding = x.sharding().named();
  const PartitionSpec& spec = sharding.spec();
  auto gather = [&spec](const Array& block) {
    Array out = block;
    for (int d = 0; d < static_cast<int>(spec.size()); ++d) {
      const std::vector<std::string>& axes = spec[d].names();
      if (axes.empty()) continue;
      out = all_gather(out, AxisNames(axes), {.axis = d, .tiled = true});
    }
    return out;
  };
  return shard_map(gather, sharding.mesh(), spec, P(),
                   {.check_vma = false, .name = "process_allgather"})(x);
}

}  // namespace spmd
