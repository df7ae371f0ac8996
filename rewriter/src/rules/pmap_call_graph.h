// SPDX-License-Identifier: Apache-2.0
// The call graph the pmap rule needs to find nested pmaps (migration.h's FunctionFacts): for each
// user function of a translation unit, the user functions it may call, the pmap callables it runs
// and the calls it cannot follow. Facts of every unit of a run are joined in nesting.h, so that a
// pmap reached from another pmap's body through helpers in other files is found.
//
// "May call" is conservative: a function named or whose address is taken, a lambda written in
// the body, a functor class constructed, a method (and, in nesting.h, its overriders). System
// headers and the spmd runtime are leaves: they never run a pmap of their own, and the callables
// the body hands them are counted as the body's. A pmap callable the body calls or hands on
// counts as run; its site is named when the callable is a pmap(...) expression, a variable or a
// member initialised with one.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/AST/Decl.h>
#include <clang/AST/Expr.h>

#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "migration.h"

namespace spmd::migrate {

// The key of a function in the run's call graph: its USR (the same in every translation unit).
std::string function_key(const clang::FunctionDecl* fn);

// True for a function of the user's code: not in a system header, not in namespace spmd or std.
bool is_user_function(const clang::FunctionDecl* fn, const clang::SourceManager& sm);

// True for spmd::Pmapped<F>, the callable legacy pmap returns.
bool is_pmapped_type(clang::QualType type);

class CallGraph {
 public:
  explicit CallGraph(clang::ASTContext& ctx) : ctx_(ctx) {}

  // Walks every user function of the translation unit (and each lambda and template
  // specialization they reach) into `out`; callees without a body here get a declaration entry.
  void build(std::map<std::string, FunctionFacts>& out);

  // The facts of a pmap's mapped function expression `f`: the bodies calling it may run. Walks
  // what it reaches that `build` did not (call after build).
  BodyFacts mapped(const clang::Expr* f, std::map<std::string, FunctionFacts>& out);

  // The site of the pmap callable `e` evaluates to, when the tool can tell: the pmap(...)
  // expression itself, or through a variable or member initialised with one.
  std::optional<Location> site_of(const clang::Expr* e) const;

 private:
  friend class BodyWalker;
  // Records `fn` as a callee of `facts` and queues its body.
  void call(const clang::FunctionDecl* fn, BodyFacts& facts);
  // Adds the call operators of `type`'s class, when it is a user functor, as callees.
  void call_operators(clang::QualType type, BodyFacts& facts);
  void walk(const clang::FunctionDecl* fn, std::map<std::string, FunctionFacts>& out);
  void drain(std::map<std::string, FunctionFacts>& out);

  clang::ASTContext& ctx_;
  std::deque<const clang::FunctionDecl*> queue_;
  std::set<const clang::FunctionDecl*> queued_;
  std::set<std::string> declared_;  // keys of the callees seen
  std::vector<std::pair<std::string, const clang::FunctionDecl*>> undrained_;  // new since drain
};

}  // namespace spmd::migrate
