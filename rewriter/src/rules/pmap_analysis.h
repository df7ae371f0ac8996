// SPDX-License-Identifier: Apache-2.0
// What the pmap rule needs to know about one spmd::pmap(f, axis, options) construct, read from
// the AST: the options (only when they are compile-time visible), the mapped function's body (for
// out_axes=nullopt), and whether an output is provably the same on every device along an axis.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/AST/Expr.h>

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace spmd::migrate {

// One pmap level: spmd::pmap(f, axis, options).
struct PmapLevelInfo {
  const clang::CallExpr* call = nullptr;
  std::string axis;                             // as written; "" for an unnamed pmap
  std::vector<std::optional<int>> in_axes{0};   // one entry for all, or one per Array argument
  std::vector<std::optional<int>> out_axes{0};  // one entry for all, or one per output
  std::string devices;                          // source text of options.devices, or ""
  std::string axis_size;                        // source text of options.axis_size, or ""
  std::vector<int> donate_argnums;
};

// Reads the axis name and options of a pmap call. Returns the reason when they are not known at
// compile time (options built at run time, a non-literal axis name, a non-constant axis).
std::variant<PmapLevelInfo, std::string> read_level(const clang::CallExpr* pmap_call,
                                                    clang::ASTContext& ctx);

// `e` without the nodes the source does not spell (casts, temporaries, converting and copy
// constructors) and without parentheses.
const clang::Expr* spelled(const clang::Expr* e);

// True when `body` may change the local `var` (assign it, take its address, bind it to a
// non-const reference, capture it by reference), conservatively.
bool may_modify(const clang::Stmt* body, const clang::VarDecl* var);

// True for a call to spmd::pmap.
bool is_pmap_call(const clang::Expr* e);
// The pmap call `e` is, looking through implicit nodes and parentheses; null otherwise.
const clang::CallExpr* as_pmap_call(const clang::Expr* e);

// The body the tool can see for the mapped function `f` (a lambda's call operator, or a function
// defined in this translation unit), or null.
const clang::FunctionDecl* mapped_body(const clang::Expr* f);

// True when output `output` (of `num_outputs`) of `fn` is provably the same on every device along
// `axis`: built only from invariant values (literals, globals, captures, parameters that are not
// `varying`) and results of collectives that reduce or gather over `axis`, through spmd
// operations. Conservative: false whenever unsure.
bool provably_replicated(const clang::FunctionDecl* fn, size_t output, size_t num_outputs,
                         const std::vector<bool>& varying, const std::string& axis,
                         clang::ASTContext& ctx);

}  // namespace spmd::migrate
