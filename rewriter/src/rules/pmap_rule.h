// SPDX-License-Identifier: Apache-2.0
// Rule pmap: spmd::pmap(f, axis, options) -> spmd::shard_map code with the same results
// (docs/migration.md says what it writes and why it leaves a site; pmap_codegen.h shows the code).
//
// It migrates a pmap construct whose every call the tool can see: called directly
// (`spmd::pmap(f, "i")(x)`) or stored in an `auto` variable, local or of one file only, that is
// only ever called, f a lambda, function or functor, options inline or in a const variable, nested
// pmaps written as `pmap(pmap(f, "j", ...), "i", ...)` or through variables (one shard_map over a
// two-axis mesh). Only the pmap(...) expression is replaced, by a lambda with the same call
// signature, so call sites stay as they are. A pmap reachable from another pmap's function
// (pmap_call_graph.h) is never migrated alone.
//
// Everything else is reported, never edited, under a rule id that says why (pmap-macro,
// pmap-escape, pmap-options, pmap-negative-axis, pmap-out-axes-none, pmap-nested,
// pmap-unseen-callee, pmap-template), with the manual fix.
#pragma once

#include <clang/AST/Expr.h>

#include <vector>

#include "rule.h"

namespace spmd::migrate {

class PmapRule : public Rule {
 public:
  explicit PmapRule(Sink& sink) : Rule("pmap", sink) {}
  void register_matchers(clang::ast_matchers::MatchFinder& finder) override;
  void run(const clang::ast_matchers::MatchFinder::MatchResult& result) override;
  // Sites are decided together, once the whole translation unit is seen: nesting, and a stored
  // callable's calls, need every pmap of the unit.
  void onEndOfTranslationUnit() override;

 private:
  clang::ASTContext* context_ = nullptr;
  std::vector<const clang::CallExpr*> calls_;
};

}  // namespace spmd::migrate
