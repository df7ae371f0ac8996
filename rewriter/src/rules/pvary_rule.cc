// SPDX-License-Identifier: Apache-2.0
// Rule pvary (pvary_rule.h): renames the callee and appends the `to` argument, keeping the
// caller's spelling of everything else.
#include "rules/pvary_rule.h"

#include <clang/Lex/Lexer.h>

namespace spmd::migrate {

using namespace clang::ast_matchers;

void PvaryRule::register_matchers(MatchFinder& finder) {
  finder.addMatcher(callExpr(callee(functionDecl(hasName("::spmd::pvary"))), argumentCountIs(2),
                             unless(isExpansionInSystemHeader()))
                        .bind("call"),
                    this);
}

void PvaryRule::run(const MatchFinder::MatchResult& result) {
  const auto* call = result.Nodes.getNodeAs<clang::CallExpr>("call");
  const clang::SourceManager& sm = *result.SourceManager;
  const clang::LangOptions& lang = result.Context->getLangOpts();
  const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(call->getCallee()->IgnoreImplicit());
  if (in_macro_body(sm, call->getSourceRange()) || ref == nullptr) {
    sink().warn(sm, call->getBeginLoc(), name(),
                "pvary is deprecated; this call is inside a macro body or made through a "
                "pointer, so it is left as is: write spmd::pcast(x, axes, spmd::To::kVarying)");
    return;
  }
  clang::SourceLocation after_axes =
      clang::Lexer::getLocForEndOfToken(call->getArg(1)->getEndLoc(), 0, sm, lang);
  EditBatch edits(sink(), sm, lang);
  edits.replace(clang::CharSourceRange::getTokenRange(ref->getNameInfo().getLoc()), "pcast")
      .insert(after_axes, ", spmd::To::kVarying");
  if (!edits.commit()) {
    sink().warn(sm, call->getBeginLoc(), name(),
                "cannot edit this pvary call (its text is produced by a macro): write "
                "spmd::pcast(x, axes, spmd::To::kVarying)");
    return;
  }
  sink().add_include(sm, call->getBeginLoc(), "spmd/collectives.h");
  sink().migrated(sm, call->getBeginLoc(), name());
}

}  // namespace spmd::migrate
