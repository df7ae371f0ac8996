// SPDX-License-Identifier: Apache-2.0
// Rule pvary: spmd::pvary(x, axes) -> spmd::pcast(x, axes, spmd::To::kVarying) (jax.lax.pvary was
// deprecated in JAX 0.8.2 in favour of pcast(..., to='varying'); docs/migration.md).
#pragma once

#include "rule.h"

namespace spmd::migrate {

class PvaryRule : public Rule {
 public:
  explicit PvaryRule(Sink& sink) : Rule("pvary", sink) {}
  void register_matchers(clang::ast_matchers::MatchFinder& finder) override;
  void run(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
};

}  // namespace spmd::migrate
