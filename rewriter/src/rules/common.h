// SPDX-License-Identifier: Apache-2.0
// Helpers shared by rules.
#pragma once

#include <clang/AST/Expr.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>

#include <string>

#include "rule.h"

namespace spmd::migrate {

// Replaces the whole of `call` with `text` and includes `header`; when the call is inside a macro
// body or its text cannot be edited, reports it under `rule` with `manual` (the fix to apply by
// hand) instead.
void replace_call(Sink& sink, const std::string& rule,
                  const clang::ast_matchers::MatchFinder::MatchResult& result,
                  const clang::CallExpr* call, const std::string& text, const std::string& header,
                  const std::string& manual);

// The source text of an expression as written.
std::string source_text(const clang::ast_matchers::MatchFinder::MatchResult& result,
                        const clang::Expr* e);

// True when evaluating `e` several times is the same as evaluating it once (a variable, a member
// of one, a literal, or spmd::devices()), so generated code may repeat its text.
bool repeatable(const clang::Expr* e);

// `body`, an expression template that uses the placeholder `$` for the value of `e` (written
// `text`), as code that evaluates `e` exactly once: `body` with `$` replaced by `text` when `e`
// is repeatable, else an immediately invoked lambda taking the value as `name`:
// [&](const TYPE& NAME) { return BODY; }(TEXT).
std::string bind_once(const clang::Expr* e, const std::string& text, const std::string& type,
                      const std::string& name, const std::string& body);

}  // namespace spmd::migrate
