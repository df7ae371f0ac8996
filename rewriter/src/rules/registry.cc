// SPDX-License-Identifier: Apache-2.0
// The rule table, in the order rules run.
#include "rules/device_put_replicated_rule.h"
#include "rules/device_put_sharded_rule.h"
#include "rules/pmap_rule.h"
#include "rules/pvary_rule.h"

namespace spmd::migrate {

std::vector<std::unique_ptr<Rule>> make_rules(Sink& sink) {
  std::vector<std::unique_ptr<Rule>> rules;
  rules.push_back(std::make_unique<PmapRule>(sink));
  rules.push_back(std::make_unique<PvaryRule>(sink));
  rules.push_back(std::make_unique<DevicePutReplicatedRule>(sink));
  rules.push_back(std::make_unique<DevicePutShardedRule>(sink));
  return rules;
}

}  // namespace spmd::migrate
