// SPDX-License-Identifier: Apache-2.0
// Reading pmap constructs from the AST (pmap_analysis.h).
#include "rules/pmap_analysis.h"

#include <clang/AST/Decl.h>
#include <clang/AST/DeclCXX.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Lex/Lexer.h>

#include <set>

namespace spmd::migrate {
namespace {

std::string text_of(const clang::Expr* e, clang::ASTContext& ctx) {
  return clang::Lexer::getSourceText(clang::CharSourceRange::getTokenRange(e->getSourceRange()),
                                     ctx.getSourceManager(), ctx.getLangOpts())
      .str();
}

// True for an options field the source does not give (its default member initialiser), or
// gives as the value-initialised value, which for devices, axis_size and donate_argnums is also
// their default.
bool is_default(const clang::Expr* e, bool empty_is_default = false) {
  if (e == nullptr || llvm::isa<clang::CXXDefaultInitExpr>(e) ||
      llvm::isa<clang::ImplicitValueInitExpr>(e) || llvm::isa<clang::CXXDefaultArgExpr>(e)) {
    return true;
  }
  const auto* construct = llvm::dyn_cast<clang::CXXConstructExpr>(e->IgnoreImplicit());
  return empty_is_default && construct != nullptr && construct->getNumArgs() == 0;
}

// The elements of a braced list used to initialise a std::vector (or an empty list).
std::optional<std::vector<const clang::Expr*>> list_elements(const clang::Expr* e) {
  e = e->IgnoreImplicit();
  if (const auto* construct = llvm::dyn_cast<clang::CXXConstructExpr>(e)) {
    if (construct->getNumArgs() == 0) return std::vector<const clang::Expr*>{};
    e = construct->getArg(0)->IgnoreImplicit();
  }
  if (const auto* init_list = llvm::dyn_cast<clang::CXXStdInitializerListExpr>(e)) {
    e = init_list->getSubExpr()->IgnoreImplicit();
  }
  if (const auto* list = llvm::dyn_cast<clang::InitListExpr>(e)) {
    std::vector<const clang::Expr*> out;
    for (const clang::Expr* element : list->inits()) out.push_back(element);
    return out;
  }
  return std::nullopt;
}

// Reads an in_axes/out_axes entry, an integer constant or std::nullopt, into `out`; false when it
// is neither.
bool axis_entry(const clang::Expr* e, clang::ASTContext& ctx, std::optional<int>& out) {
  const clang::Expr* value = spelled(e);
  std::string type = value->getType().getCanonicalType().getAsString();
  if (type.find("nullopt_t") != std::string::npos) {
    out = std::nullopt;
    return true;
  }
  clang::Expr::EvalResult result;
  if (!value->EvaluateAsInt(result, ctx)) return false;
  out = static_cast<int>(result.Val.getInt().getExtValue());
  return true;
}

std::optional<std::vector<std::optional<int>>> axes_list(const clang::Expr* e,
                                                         clang::ASTContext& ctx) {
  std::optional<std::vector<const clang::Expr*>> elements = list_elements(e);
  if (!elements) return std::nullopt;
  std::vector<std::optional<int>> out(elements->size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!axis_entry((*elements)[i], ctx, out[i])) return std::nullopt;
  }
  return out;
}

// The braced PmapOptions of a pmap call: written inline, or through a const variable.
const clang::InitListExpr* options_list(const clang::Expr* e) {
  e = e->IgnoreImplicit();
  if (const auto* construct = llvm::dyn_cast<clang::CXXConstructExpr>(e)) {
    if (construct->getNumArgs() == 1) e = construct->getArg(0)->IgnoreImplicit();
  }
  if (const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts())) {
    const auto* var = llvm::dyn_cast<clang::VarDecl>(ref->getDecl());
    if (var == nullptr || !var->getType().isConstQualified() || var->getInit() == nullptr) {
      return nullptr;
    }
    return options_list(var->getInit());
  }
  const auto* list = llvm::dyn_cast<clang::InitListExpr>(e);
  if (list != nullptr && list->isSyntacticForm() && list->getSemanticForm() != nullptr) {
    list = list->getSemanticForm();
  }
  return list;
}

}  // namespace

const clang::Expr* spelled(const clang::Expr* e) {
  while (e != nullptr) {
    const clang::Expr* next = e->IgnoreUnlessSpelledInSource()->IgnoreParens();
    if (const auto* construct = llvm::dyn_cast<clang::CXXConstructExpr>(next)) {
      // A converting or copy constructor around one argument (std::string from a literal,
      // std::optional from a value): look at the argument.
      if (construct->getNumArgs() == 1 && !llvm::isa<clang::CXXTemporaryObjectExpr>(construct)) {
        next = construct->getArg(0)->IgnoreUnlessSpelledInSource()->IgnoreParens();
      }
    }
    if (next == e) return e;
    e = next;
  }
  return e;
}

bool may_modify(const clang::Stmt* body, const clang::VarDecl* var) {
  struct Finder : clang::RecursiveASTVisitor<Finder> {
    const clang::VarDecl* var;
    bool found = false;
    bool refers(const clang::Expr* e) {
      const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(e->IgnoreParenImpCasts());
      return ref != nullptr && ref->getDecl() == var;
    }
    bool VisitBinaryOperator(clang::BinaryOperator* op) {
      found = found || (op->isAssignmentOp() && refers(op->getLHS()));
      return true;
    }
    bool VisitUnaryOperator(clang::UnaryOperator* op) {
      found = found || ((op->isIncrementDecrementOp() || op->getOpcode() == clang::UO_AddrOf) &&
                        refers(op->getSubExpr()));
      return true;
    }
    bool VisitCXXOperatorCallExpr(clang::CXXOperatorCallExpr* call) {
      found =
          found || (call->isAssignmentOp() && call->getNumArgs() > 0 && refers(call->getArg(0)));
      return true;
    }
    bool VisitCallExpr(clang::CallExpr* call) {
      const clang::FunctionDecl* callee = call->getDirectCallee();
      // These take forwarding references but only copy or move from them (pmap decays and
      // copies its function).
      static const std::set<std::string> kPacking = {"std::make_tuple",       "std::make_pair",
                                                     "std::forward_as_tuple", "std::move",
                                                     "std::forward",          "spmd::pmap"};
      if (callee != nullptr && kPacking.count(callee->getQualifiedNameAsString()) != 0) {
        return true;
      }
      for (unsigned i = 0; i < call->getNumArgs(); ++i) {
        if (!refers(call->getArg(i))) continue;
        bool const_ref =
            callee != nullptr && i < callee->getNumParams() &&
            (!callee->getParamDecl(i)->getType()->isReferenceType() ||
             callee->getParamDecl(i)->getType().getNonReferenceType().isConstQualified());
        found = found || !const_ref;
      }
      return true;
    }
    bool VisitLambdaExpr(clang::LambdaExpr* lambda) {
      for (const clang::LambdaCapture& c : lambda->captures()) {
        found = found || (c.capturesVariable() && c.getCapturedVar() == var &&
                          c.getCaptureKind() == clang::LCK_ByRef);
      }
      return true;
    }
  } finder;
  finder.var = var;
  finder.TraverseStmt(const_cast<clang::Stmt*>(body));
  return finder.found;
}

bool is_pmap_call(const clang::Expr* e) { return as_pmap_call(e) != nullptr; }

const clang::CallExpr* as_pmap_call(const clang::Expr* e) {
  if (e == nullptr) return nullptr;
  const auto* call = llvm::dyn_cast<clang::CallExpr>(e->IgnoreImplicit()->IgnoreParens());
  if (call == nullptr) call = llvm::dyn_cast<clang::CallExpr>(spelled(e));
  if (call == nullptr || call->getDirectCallee() == nullptr) return nullptr;
  return call->getDirectCallee()->getQualifiedNameAsString() == "spmd::pmap" ? call : nullptr;
}

std::variant<PmapLevelInfo, std::string> read_level(const clang::CallExpr* pmap_call,
                                                    clang::ASTContext& ctx) {
  PmapLevelInfo level;
  level.call = pmap_call;
  const auto* axis = llvm::dyn_cast<clang::StringLiteral>(spelled(pmap_call->getArg(1)));
  if (axis == nullptr) {
    return std::string(
        "the axis name is not a string literal, so the mesh axis is unknown at "
        "compile time; give the literal name");
  }
  level.axis = axis->getString().str();
  if (pmap_call->getNumArgs() < 3 || is_default(pmap_call->getArg(2))) return level;
  const clang::InitListExpr* options = options_list(pmap_call->getArg(2));
  if (options == nullptr) {
    return std::string(
        "the pmap options are built at run time (or through a variable that is "
        "not const), so in_axes/out_axes are unknown at compile time; write them "
        "inline or in a const variable");
  }
  auto field = [&](unsigned i) -> const clang::Expr* {
    return i < options->getNumInits() ? options->getInit(i) : nullptr;
  };
  const char* not_constant =
      "an in_axes/out_axes/donate_argnums entry is not a compile-time integer or std::nullopt";
  if (!is_default(field(0))) {
    auto axes = axes_list(field(0), ctx);
    if (!axes) return std::string(not_constant);
    level.in_axes = *axes;
  }
  if (!is_default(field(1))) {
    auto axes = axes_list(field(1), ctx);
    if (!axes) return std::string(not_constant);
    level.out_axes = *axes;
  }
  if (!is_default(field(2), true)) level.devices = text_of(spelled(field(2)), ctx);
  if (!is_default(field(3), true)) {
    const clang::Expr* size = spelled(field(3));
    level.axis_size = text_of(size, ctx);
    // Braced into a Shape (int64_t) by the migrated code, where narrowing is an error.
    if (!size->getType()->isSignedIntegerType()) {
      level.axis_size = "static_cast<int64_t>(" + level.axis_size + ")";
    }
  }
  if (!is_default(field(4), true)) {
    auto donate = axes_list(field(4), ctx);
    if (!donate) return std::string(not_constant);
    for (const std::optional<int>& d : *donate) {
      if (!d) return std::string(not_constant);
      level.donate_argnums.push_back(*d);
    }
  }
  return level;
}

const clang::FunctionDecl* mapped_body(const clang::Expr* f) {
  f = spelled(f);
  if (const auto* lambda = llvm::dyn_cast<clang::LambdaExpr>(f)) {
    const clang::CXXMethodDecl* op = lambda->getCallOperator();
    return op != nullptr && op->hasBody() && !lambda->getLambdaClass()->isGenericLambda() ? op
                                                                                          : nullptr;
  }
  if (const auto* unary = llvm::dyn_cast<clang::UnaryOperator>(f)) f = spelled(unary->getSubExpr());
  if (const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(f)) {
    if (const auto* fn = llvm::dyn_cast<clang::FunctionDecl>(ref->getDecl())) {
      const clang::FunctionDecl* definition = fn->getDefinition();
      return definition != nullptr && definition->hasBody() ? definition : nullptr;
    }
  }
  return nullptr;
}

namespace {

// The static "varying manual axes" inference of check_vma, for one axis, over one function body.
class Prover {
 public:
  Prover(const clang::FunctionDecl* fn, const std::vector<bool>& varying, std::string axis,
         clang::ASTContext& ctx)
      : fn_(fn), varying_(varying), axis_(std::move(axis)), ctx_(ctx) {}

  bool invariant(const clang::Expr* e, int depth = 0) {
    if (e == nullptr || depth > 64) return false;
    e = e->IgnoreParenImpCasts();
    if (const auto* cleanups = llvm::dyn_cast<clang::ExprWithCleanups>(e)) {
      return invariant(cleanups->getSubExpr(), depth + 1);
    }
    if (const auto* temp = llvm::dyn_cast<clang::MaterializeTemporaryExpr>(e)) {
      return invariant(temp->getSubExpr(), depth + 1);
    }
    if (const auto* bind = llvm::dyn_cast<clang::CXXBindTemporaryExpr>(e)) {
      return invariant(bind->getSubExpr(), depth + 1);
    }
    // Literals, and defaulted arguments and members: the same expression on every device.
    if (llvm::isa<clang::IntegerLiteral, clang::FloatingLiteral, clang::CXXBoolLiteralExpr,
                  clang::StringLiteral, clang::CharacterLiteral, clang::CXXDefaultArgExpr,
                  clang::CXXDefaultInitExpr, clang::ImplicitValueInitExpr>(e)) {
      return true;
    }
    if (const auto* init_list = llvm::dyn_cast<clang::CXXStdInitializerListExpr>(e)) {
      return invariant(init_list->getSubExpr(), depth + 1);
    }
    if (const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(e)) return invariant_decl(ref, depth);
    if (const auto* member = llvm::dyn_cast<clang::MemberExpr>(e)) {
      return invariant(member->getBase(), depth + 1);
    }
    if (const auto* cond = llvm::dyn_cast<clang::ConditionalOperator>(e)) {
      return invariant(cond->getCond(), depth + 1) && invariant(cond->getTrueExpr(), depth + 1) &&
             invariant(cond->getFalseExpr(), depth + 1);
    }
    if (const auto* unary = llvm::dyn_cast<clang::UnaryOperator>(e)) {
      return invariant(unary->getSubExpr(), depth + 1);
    }
    if (const auto* binary = llvm::dyn_cast<clang::BinaryOperator>(e)) {
      return !binary->isAssignmentOp() && invariant(binary->getLHS(), depth + 1) &&
             invariant(binary->getRHS(), depth + 1);
    }
    if (const auto* construct = llvm::dyn_cast<clang::CXXConstructExpr>(e)) {
      return all_invariant(construct->arguments(), depth);
    }
    if (const auto* list = llvm::dyn_cast<clang::InitListExpr>(e)) {
      return all_invariant(list->inits(), depth);
    }
    if (const auto* call = llvm::dyn_cast<clang::CallExpr>(e)) return invariant_call(call, depth);
    return false;
  }

 private:
  template <class Range>
  bool all_invariant(const Range& range, int depth) {
    for (const clang::Expr* arg : range) {
      if (!invariant(arg, depth + 1)) return false;
    }
    return true;
  }

  bool invariant_decl(const clang::DeclRefExpr* ref, int depth) {
    const clang::ValueDecl* decl = ref->getDecl();
    if (const auto* param = llvm::dyn_cast<clang::ParmVarDecl>(decl)) {
      for (unsigned i = 0; i < fn_->getNumParams(); ++i) {
        if (fn_->getParamDecl(i) == param) return i < varying_.size() && !varying_[i];
      }
      return false;
    }
    const auto* var = llvm::dyn_cast<clang::VarDecl>(decl);
    if (var == nullptr) return llvm::isa<clang::EnumConstantDecl>(decl);
    // Globals and captured outer variables are the same on every device.
    if (!var->isLocalVarDecl() || var->getDeclContext() != fn_) {
      return !var->isLocalVarDecl() || !fn_->Encloses(var->getDeclContext()) ? true : false;
    }
    if (var->getInit() == nullptr || modified(var)) return false;
    return invariant(var->getInit(), depth + 1);
  }

  bool modified(const clang::VarDecl* var) { return may_modify(fn_->getBody(), var); }

  // The names an AxisNames argument spells: "i" or {"i", "j"}.
  std::set<std::string> axis_names(const clang::Expr* e) {
    std::set<std::string> out;
    e = e->IgnoreImplicit();
    if (const auto* construct = llvm::dyn_cast<clang::CXXConstructExpr>(e)) {
      for (const clang::Expr* arg : construct->arguments()) {
        std::set<std::string> inner = axis_names(arg);
        out.insert(inner.begin(), inner.end());
      }
    } else if (const auto* init_list = llvm::dyn_cast<clang::CXXStdInitializerListExpr>(e)) {
      return axis_names(init_list->getSubExpr());
    } else if (const auto* list = llvm::dyn_cast<clang::InitListExpr>(e)) {
      for (const clang::Expr* element : list->inits()) {
        std::set<std::string> inner = axis_names(element);
        out.insert(inner.begin(), inner.end());
      }
    } else if (const auto* literal =
                   llvm::dyn_cast<clang::StringLiteral>(e->IgnoreParenImpCasts())) {
      out.insert(literal->getString().str());
    }
    return out;
  }

  bool invariant_call(const clang::CallExpr* call, int depth) {
    const clang::FunctionDecl* callee = call->getDirectCallee();
    if (callee == nullptr) return false;
    std::string name = callee->getQualifiedNameAsString();
    // Collectives that leave the same value on every device of the axis (without groups).
    static const std::set<std::string> kReplicating = {"spmd::psum", "spmd::pmean", "spmd::pmax",
                                                       "spmd::pmin", "spmd::all_gather"};
    if (kReplicating.count(name) != 0) {
      bool no_groups =
          call->getNumArgs() < 3 || llvm::isa<clang::CXXDefaultArgExpr>(call->getArg(2)) ||
          text_of(call->getArg(2), ctx_).find("axis_index_groups") == std::string::npos;
      return call->getNumArgs() >= 2 && no_groups && axis_names(call->getArg(1)).count(axis_) != 0;
    }
    if (name == "spmd::axis_size") return true;
    // Everything else in spmd (and operators on Arrays) is a deterministic function of its
    // operands, except what depends on the device's position or exchanges data.
    static const std::set<std::string> kVarying = {"spmd::axis_index", "spmd::ppermute",
                                                   "spmd::pshuffle",   "spmd::psum_scatter",
                                                   "spmd::all_to_all", "spmd::pswapaxes"};
    if (kVarying.count(name) != 0 || name.rfind("spmd::", 0) != 0) return false;
    if (const auto* member = llvm::dyn_cast<clang::CXXMemberCallExpr>(call)) {
      if (!invariant(member->getImplicitObjectArgument(), depth + 1)) return false;
    }
    return all_invariant(call->arguments(), depth);
  }

  const clang::FunctionDecl* fn_;
  const std::vector<bool>& varying_;
  std::string axis_;
  clang::ASTContext& ctx_;
};

// The expression a return statement gives for output `output`.
const clang::Expr* output_expr(const clang::Expr* returned, size_t output, size_t num_outputs) {
  if (num_outputs == 1) return returned;
  const clang::Expr* e = returned->IgnoreImplicit();
  if (const auto* call = llvm::dyn_cast<clang::CallExpr>(e)) {
    const clang::FunctionDecl* callee = call->getDirectCallee();
    if (callee != nullptr && callee->getQualifiedNameAsString() == "std::make_tuple" &&
        call->getNumArgs() == num_outputs) {
      return call->getArg(output);
    }
  }
  if (const auto* construct = llvm::dyn_cast<clang::CXXConstructExpr>(e)) {
    if (construct->getNumArgs() == num_outputs) return construct->getArg(output);
  }
  if (const auto* list = llvm::dyn_cast<clang::InitListExpr>(e)) {
    if (list->getNumInits() == num_outputs) return list->getInit(output);
  }
  return nullptr;
}

}  // namespace

bool provably_replicated(const clang::FunctionDecl* fn, size_t output, size_t num_outputs,
                         const std::vector<bool>& varying, const std::string& axis,
                         clang::ASTContext& ctx) {
  if (fn == nullptr || fn->getBody() == nullptr) return false;
  struct Returns : clang::RecursiveASTVisitor<Returns> {
    std::vector<const clang::ReturnStmt*> found;
    bool VisitReturnStmt(clang::ReturnStmt* r) {
      found.push_back(r);
      return true;
    }
    bool TraverseLambdaExpr(clang::LambdaExpr*) { return true; }  // not this function's returns
  } returns;
  returns.TraverseStmt(fn->getBody());
  if (returns.found.empty()) return false;
  Prover prover(fn, varying, axis, ctx);
  for (const clang::ReturnStmt* r : returns.found) {
    const clang::Expr* e =
        r->getRetValue() == nullptr ? nullptr : output_expr(r->getRetValue(), output, num_outputs);
    if (!prover.invariant(e)) return false;
  }
  return true;
}

}  // namespace spmd::migrate
