// SPDX-License-Identifier: Apache-2.0
// Rule helpers (common.h).
#include "rules/common.h"

#include <clang/AST/Decl.h>
#include <clang/AST/ExprCXX.h>
#include <clang/Lex/Lexer.h>

namespace spmd::migrate {

void replace_call(Sink& sink, const std::string& rule,
                  const clang::ast_matchers::MatchFinder::MatchResult& result,
                  const clang::CallExpr* call, const std::string& text, const std::string& header,
                  const std::string& manual) {
  const clang::SourceManager& sm = *result.SourceManager;
  EditBatch edits(sink, sm, result.Context->getLangOpts());
  edits.replace(clang::CharSourceRange::getTokenRange(call->getSourceRange()), text);
  bool macro = false;
  for (clang::SourceLocation loc : {call->getBeginLoc(), call->getEndLoc()}) {
    macro = macro || (loc.isMacroID() && !sm.isMacroArgExpansion(loc));
  }
  if (macro || !edits.commit()) {
    sink.warn(sm, call->getBeginLoc(), rule,
              "this call is written inside a macro body, so it is left as is; migrate it by "
              "hand: " +
                  manual);
    return;
  }
  sink.add_include(sm, call->getBeginLoc(), header);
  sink.migrated(sm, call->getBeginLoc(), rule);
}

std::string source_text(const clang::ast_matchers::MatchFinder::MatchResult& result,
                        const clang::Expr* e) {
  return clang::Lexer::getSourceText(clang::CharSourceRange::getTokenRange(e->getSourceRange()),
                                     *result.SourceManager, result.Context->getLangOpts())
      .str();
}

bool repeatable(const clang::Expr* e) {
  e = e->IgnoreUnlessSpelledInSource();
  if (llvm::isa<clang::DeclRefExpr>(e) || llvm::isa<clang::IntegerLiteral>(e) ||
      llvm::isa<clang::StringLiteral>(e)) {
    return true;
  }
  if (const auto* member = llvm::dyn_cast<clang::MemberExpr>(e)) {
    return repeatable(member->getBase());
  }
  if (const auto* call = llvm::dyn_cast<clang::CallExpr>(e)) {
    const clang::FunctionDecl* f = call->getDirectCallee();
    return f != nullptr && call->getNumArgs() == 0 &&
           f->getQualifiedNameAsString() == "spmd::devices";
  }
  return false;
}

namespace {

std::string substitute(std::string body, const std::string& value) {
  for (size_t at = body.find('$'); at != std::string::npos; at = body.find('$', at)) {
    body.replace(at, 1, value);
    at += value.size();
  }
  return body;
}

}  // namespace

std::string bind_once(const clang::Expr* e, const std::string& text, const std::string& type,
                      const std::string& name, const std::string& body) {
  if (repeatable(e)) return substitute(body, text);
  return "[&](const " + type + "& " + name + ") { return " + substitute(body, name) + "; }(" +
         text + ")";
}

}  // namespace spmd::migrate
