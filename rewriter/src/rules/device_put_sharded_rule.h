// SPDX-License-Identifier: Apache-2.0
// Rule device-put-sharded: spmd::device_put_sharded(xs, devices) ->
// spmd::device_put(spmd::stack(xs), NamedSharding(Mesh(devices, {n}, {"x"}), P("x"))) with
// n = devices.size(): JAX's drop-in replacement (docs/migration.md, "What the tool writes"). Same
// layout, same values.
#pragma once

#include "rule.h"

namespace spmd::migrate {

class DevicePutShardedRule : public Rule {
 public:
  explicit DevicePutShardedRule(Sink& sink) : Rule("device-put-sharded", sink) {}
  void register_matchers(clang::ast_matchers::MatchFinder& finder) override;
  void run(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

}  // namespace spmd::migrate
