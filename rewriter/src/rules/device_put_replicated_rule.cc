// SPDX-License-Identifier: Apache-2.0
// Rule device-put-replicated (device_put_replicated_rule.h).
#include "rules/device_put_replicated_rule.h"

#include "rules/common.h"

namespace spmd::migrate {

using namespace clang::ast_matchers;

void DevicePutReplicatedRule::register_matchers(MatchFinder& finder) {
  finder.addMatcher(callExpr(callee(functionDecl(hasName("::spmd::device_put_replicated"))),
                             argumentCountIs(2), unless(isExpansionInSystemHeader()))
                        .bind("call"),
                    this);
}

void DevicePutReplicatedRule::run(const MatchFinder::MatchResult& result) {
  const auto* call = result.Nodes.getNodeAs<clang::CallExpr>("call");
  const std::string x = source_text(result, call->getArg(0));
  const clang::Expr* devices = call->getArg(1);
  std::string text = bind_once(
      devices, source_text(result, devices), "std::vector<spmd::Device>", "mesh_devices",
      "spmd::device_put(spmd::stack(std::vector<spmd::Array>($.size(), " + x +
          ")), spmd::NamedSharding(spmd::Mesh($, {static_cast<int64_t>($.size())}, {\"x\"}), "
          "spmd::P(\"x\")))");
  replace_call(sink(), name(), result, call, text, "spmd/spmd.h",
               "spmd::device_put(spmd::stack(copies of x), spmd::NamedSharding(spmd::Mesh(devices, "
               "{n}, {\"x\"}), spmd::P(\"x\")))");
}

}  // namespace spmd::migrate
