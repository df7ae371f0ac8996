// SPDX-License-Identifier: Apache-2.0
// spmd::process_allgather (spmd/distributed.h): the global value of an array in every process,
// gathered with the collectives of one shard_map over the array's mesh.
#include <fmt/format.h>

#include "collectives_internal.h"
#include "spmd/collectives.h"
#include "spmd/distributed.h"
#include "spmd/shard_map.h"

namespace spmd {

Array process_allgather(const Array& x) {
  if (!x.sharding().is_named()) return x;  // one device: every process that holds it has it all
  const NamedSharding& sharding = x.sharding().named();
  const PartitionSpec& spec = sharding.spec();
  auto gather = [&spec](const Array& block) { return internal::gather_blocks(block, spec); };
  internal::ShardMapPlan plan{sharding.mesh(),
                              spec,
                              P(),
                              {.check_vma = false, .name = "process_allgather"},
                              "process_allgather"};
  plan.ignores_context = true;  // maps over x's mesh whatever the context mesh
  return ShardMapped<decltype(gather)>(gather, std::move(plan))(x);
}

}  // namespace spmd
