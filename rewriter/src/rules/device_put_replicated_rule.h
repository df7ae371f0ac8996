// SPDX-License-Identifier: Apache-2.0
// Rule device-put-replicated: spmd::device_put_replicated(x, devices) ->
// spmd::device_put(spmd::stack(n copies of x), NamedSharding(Mesh(devices, {n}, {"x"}), P("x")))
// with n = devices.size(): JAX's drop-in replacement (docs/migration.md, "What the tool writes");
// the helper was deprecated in JAX 0.8.1 and removed in 0.10.0. Same layout, same values.
#pragma once

#include "rule.h"

namespace spmd::migrate {

class DevicePutReplicatedRule : public Rule {
 public:
  explicit DevicePutReplicatedRule(Sink& sink) : Rule("device-put-replicated", sink) {}
  void register_matchers(clang::ast_matchers::MatchFinder& finder) override;
  void run(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

}  // namespace spmd::migrate
