// SPDX-License-Identifier: Apache-2.0
// spmd::process_allgather (spmd/distributed.h): the global value of an array in every process,
// gathered with the collectives of one shard_map over the array's mesh.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "collectives_internal.h"
#include "spmd/collectives.h"
#include "spmd/distributed.h"
#include "spmd/shard_map.h"

namespace spmd {

Array process_allgather(const Array& x) {
  if (!x.sharding().is_named()) return x;  // one device: every process that holds it has it all
  const NamedSharding& sharding = x.sharding().named();
  const PartitionSpec& spec = sharding.spec();
  // Axes the spec leaves out may hold different values on their devices (a check_vma=false
  // output that is not replicated): every process reads the first device's, as one process does.
  const std::vector<std::string> mentioned = spec.axis_names();
  std::vector<std::string> unmentioned;
  for (const std::string& name : sharding.mesh().axis_names()) {
    if (std::find(mentioned.begin(), mentioned.end(), name) == mentioned.end()) {
      unmentioned.push_back(name);
    }
  }
  auto gather = [&spec, &unmentioned](const Array& block) {
    Array first = unmentioned.empty() ? block : pbroadcast(block, unmentioned, 0);
    return internal::gather_blocks(first, spec);
  };
  internal::ShardMapPlan plan{sharding.mesh(),
                              spec,
                              P(),
                              {.check_vma = false, .name = "process_allgather"},
                              "process_allgather"};
  plan.ignores_context = true;  // maps over x's mesh whatever the context mesh
  return ShardMapped<decltype(gather)>(gather, std::move(plan))(x);
}

}  // namespace spmd
