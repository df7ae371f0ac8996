// SPDX-License-Identifier: Apache-2.0
// The call graph of one translation unit (pmap_call_graph.h).
#include "rules/pmap_call_graph.h"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Index/USRGeneration.h>
#include <clang/Lex/Lexer.h>

#include "rule.h"
#include "rules/pmap_analysis.h"

namespace spmd::migrate {
namespace {

// The top-level namespace `decl` is in, or null.
const clang::NamespaceDecl* top_namespace(const clang::Decl* decl) {
  const clang::NamespaceDecl* top = nullptr;
  for (const clang::DeclContext* dc = decl->getDeclContext(); dc != nullptr; dc = dc->getParent()) {
    if (const auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(dc)) top = ns;
  }
  return top;
}

bool is_user_decl(const clang::Decl* decl, const clang::SourceManager& sm) {
  clang::SourceLocation loc = decl->getLocation();
  if (loc.isValid() && sm.isInSystemHeader(sm.getExpansionLoc(loc))) return false;
  const clang::NamespaceDecl* top = top_namespace(decl);
  return top == nullptr || (top->getName() != "spmd" && top->getName() != "std");
}

// std::function and its kin: calling one runs a function the tool cannot name.
bool is_std_function(const clang::CXXRecordDecl* record) {
  if (record == nullptr || !record->isInStdNamespace()) return false;
  llvm::StringRef name = record->getName();
  return name == "function" || name == "move_only_function" || name == "packaged_task";
}

// True for a value through which calls go to a function the tool cannot name.
bool is_indirect_callable(clang::QualType type) {
  type = type.getNonReferenceType();
  return type->isFunctionPointerType() || type->isMemberFunctionPointerType() ||
         type->isFunctionType() || is_std_function(type->getAsCXXRecordDecl());
}

// The function a function pointer (or reference) variable always holds: initialised with f or
// &f, and const, a reference, or a local its function never changes. Null otherwise.
const clang::FunctionDecl* fixed_target(const clang::VarDecl* var) {
  const clang::Expr* init = var->getInit();
  if (init == nullptr || llvm::isa<clang::ParmVarDecl>(var)) return nullptr;
  init = spelled(init);
  if (const auto* unary = llvm::dyn_cast<clang::UnaryOperator>(init)) {
    if (unary->getOpcode() == clang::UO_AddrOf) init = spelled(unary->getSubExpr());
  }
  const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(init);
  const auto* target =
      ref == nullptr ? nullptr : llvm::dyn_cast<clang::FunctionDecl>(ref->getDecl());
  if (target == nullptr) return nullptr;
  if (var->getType()->isReferenceType() || var->getType().isConstQualified()) return target;
  const auto* fn = llvm::dyn_cast_or_null<clang::FunctionDecl>(var->getParentFunctionOrMethod());
  if (!var->isLocalVarDecl() || fn == nullptr || fn->getBody() == nullptr ||
      may_modify(fn->getBody(), var)) {
    return nullptr;
  }
  return target;
}

std::string text(const clang::Expr* e, const clang::ASTContext& ctx) {
  return clang::Lexer::getSourceText(clang::CharSourceRange::getTokenRange(e->getSourceRange()),
                                     ctx.getSourceManager(), ctx.getLangOpts())
      .str();
}

// How messages name a function: "f", "Class::method", or "(lambda)" for a lambda.
std::string display_name(const clang::FunctionDecl* fn) {
  const auto* method = llvm::dyn_cast<clang::CXXMethodDecl>(fn);
  if (method == nullptr) return fn->getNameAsString();
  if (method->getParent()->isLambda()) return "(lambda)";
  return method->getParent()->getNameAsString() + "::" + fn->getNameAsString();
}

}  // namespace

std::string function_key(const clang::FunctionDecl* fn) {
  llvm::SmallString<128> usr;
  if (!clang::index::generateUSRForDecl(fn, usr)) return std::string(usr.str());
  // No USR (should not happen for functions): the name, which is at worst too coarse.
  return "name:" + fn->getQualifiedNameAsString();
}

bool is_user_function(const clang::FunctionDecl* fn, const clang::SourceManager& sm) {
  return fn->getBuiltinID() == 0 && is_user_decl(fn, sm);
}

bool is_pmapped_type(clang::QualType type) {
  const clang::CXXRecordDecl* record = type.getNonReferenceType()->getAsCXXRecordDecl();
  if (record == nullptr || record->getName() != "Pmapped") return false;
  const auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(record->getDeclContext());
  return ns != nullptr && ns->getName() == "spmd" && ns->getParent()->isTranslationUnit();
}

// Walks one function body into its BodyFacts. Lambdas written in the body are callees with
// bodies of their own (walked separately); uses are classified in pre-order, so that a use the
// enclosing node accounts for (the object of a call, a capture, a variable's initialiser) is
// marked before it is visited.
class BodyWalker : public clang::RecursiveASTVisitor<BodyWalker> {
 public:
  BodyWalker(CallGraph& graph, BodyFacts& facts)
      : graph_(graph), facts_(facts), sm_(graph.ctx_.getSourceManager()) {}

  bool TraverseLambdaExpr(clang::LambdaExpr* lambda) {
    graph_.call_operators(graph_.ctx_.getRecordType(lambda->getLambdaClass()), facts_);
    for (clang::Expr* init : lambda->capture_inits()) {
      if (init == nullptr) continue;
      accounted_.insert(spelled(init));
      TraverseStmt(init);
    }
    return true;
  }

  bool VisitVarDecl(clang::VarDecl* var) {
    if (var->getInit() != nullptr && is_pmapped_type(var->getType())) {
      accounted_.insert(spelled(var->getInit()));  // a copy, not a run
    }
    return true;
  }

  bool VisitDeclRefExpr(clang::DeclRefExpr* ref) {
    if (const auto* fn = llvm::dyn_cast<clang::FunctionDecl>(ref->getDecl())) {
      graph_.call(fn, facts_);
    } else if (const auto* var = llvm::dyn_cast<clang::VarDecl>(ref->getDecl())) {
      if (const clang::FunctionDecl* target = fixed_target(var)) {
        graph_.call(target, facts_);
      } else {
        use(ref, var->getType(), var->getName());
      }
    }
    return true;
  }

  bool VisitMemberExpr(clang::MemberExpr* member) {
    const clang::ValueDecl* decl = member->getMemberDecl();
    if (const auto* method = llvm::dyn_cast<clang::CXXMethodDecl>(decl)) {
      graph_.call(method, facts_);
    } else if (llvm::isa<clang::FieldDecl>(decl)) {
      use(member, decl->getType(), decl->getName());
    }
    return true;
  }

  bool VisitCXXConstructExpr(clang::CXXConstructExpr* construct) {
    const clang::CXXConstructorDecl* ctor = construct->getConstructor();
    if (ctor != nullptr && !ctor->isImplicit()) graph_.call(ctor, facts_);
    graph_.call_operators(construct->getType(), facts_);
    return true;
  }

  bool VisitCallExpr(clang::CallExpr* call) {
    if (as_pmap_call(call) == call) {
      if (call->getNumArgs() > 0) accounted_.insert(spelled(call->getArg(0)));  // a nest level
      if (accounted_.count(call) == 0) {
        run(call, "hands on the pmap callable it makes");
      }
      return true;
    }
    if (const auto* op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(call)) {
      if (op->getOperator() == clang::OO_Call && op->getNumArgs() > 0) call_object(op);
      return true;
    }
    if (call->getDirectCallee() == nullptr && !call->isTypeDependent() &&
        call->getCallee() != nullptr &&
        !llvm::isa<clang::CXXPseudoDestructorExpr>(call->getCallee()->IgnoreParens())) {
      const clang::Expr* callee = spelled(call->getCallee());
      if (const auto* unary = llvm::dyn_cast<clang::UnaryOperator>(callee)) {
        if (unary->getOpcode() == clang::UO_Deref) callee = spelled(unary->getSubExpr());
      }
      const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(callee);
      const auto* var = ref == nullptr ? nullptr : llvm::dyn_cast<clang::VarDecl>(ref->getDecl());
      if (var != nullptr && fixed_target(var) != nullptr) return true;  // its target is a callee
      accounted_.insert(callee);
      indirect(call, "calls through the function pointer '" + text(callee, graph_.ctx_) + "'");
    }
    return true;
  }

 private:
  // obj(args): a pmap callable runs, a std::function calls what the tool cannot name.
  void call_object(const clang::CXXOperatorCallExpr* op) {
    const clang::Expr* object = spelled(op->getArg(0));
    const auto* method = llvm::dyn_cast_or_null<clang::CXXMethodDecl>(op->getDirectCallee());
    if (method == nullptr) return;
    if (is_pmapped_type(graph_.ctx_.getRecordType(method->getParent()))) {
      accounted_.insert(object);
      run(object, as_pmap_call(object) != nullptr
                      ? "runs the pmap it makes"
                      : "calls the pmap callable '" + text(object, graph_.ctx_) + "'");
    } else if (is_std_function(method->getParent())) {
      accounted_.insert(object);
      indirect(op, "calls the std::function '" + text(object, graph_.ctx_) + "'");
    }
  }

  // A variable or member used as a value.
  void use(const clang::Expr* e, clang::QualType type, llvm::StringRef name) {
    if (accounted_.count(e) != 0) return;
    if (is_pmapped_type(type)) {
      run(e, "hands on the pmap callable '" + name.str() + "'");
    } else if (is_indirect_callable(type)) {
      indirect(e, "uses the function pointer or std::function '" + name.str() + "'");
    } else {
      graph_.call_operators(type, facts_);  // a functor handed to code that may call it
    }
  }

  void run(const clang::Expr* e, std::string what) {
    facts_.runs.push_back(
        PmapRun{location_of(sm_, e->getBeginLoc()), graph_.site_of(e), std::move(what)});
  }

  void indirect(const clang::Expr* e, std::string what) {
    facts_.indirect.emplace_back(location_of(sm_, e->getBeginLoc()), std::move(what));
  }

  CallGraph& graph_;
  BodyFacts& facts_;
  const clang::SourceManager& sm_;
  std::set<const clang::Expr*> accounted_;
};

namespace {

// Finds every user function definition of the translation unit (template instantiations
// included), skipping system headers and the spmd and std namespaces.
class Definitions : public clang::RecursiveASTVisitor<Definitions> {
 public:
  Definitions(const clang::SourceManager& sm, std::vector<const clang::FunctionDecl*>& out)
      : sm_(sm), out_(out) {}
  bool shouldVisitTemplateInstantiations() const { return true; }

  bool TraverseDecl(clang::Decl* decl) {
    if (decl == nullptr) return true;
    if (!llvm::isa<clang::TranslationUnitDecl>(decl) && !is_user_decl(decl, sm_)) return true;
    return RecursiveASTVisitor::TraverseDecl(decl);
  }

  bool VisitFunctionDecl(clang::FunctionDecl* fn) {
    if (fn->doesThisDeclarationHaveABody() && !fn->isDependentContext()) out_.push_back(fn);
    return true;
  }

 private:
  const clang::SourceManager& sm_;
  std::vector<const clang::FunctionDecl*>& out_;
};

}  // namespace

void CallGraph::call(const clang::FunctionDecl* fn, BodyFacts& facts) {
  if (!is_user_function(fn, ctx_.getSourceManager()) || fn->isDependentContext()) return;
  std::string key = function_key(fn);
  if (facts.callees.insert(key).second && declared_.insert(key).second) {
    undrained_.emplace_back(key, fn);
  }
  const clang::FunctionDecl* definition = fn->getDefinition();
  if (definition != nullptr && definition->hasBody() && queued_.insert(definition).second) {
    queue_.push_back(definition);
  }
}

void CallGraph::call_operators(clang::QualType type, BodyFacts& facts) {
  const clang::CXXRecordDecl* record = type.getNonReferenceType()->getAsCXXRecordDecl();
  if (record == nullptr || !record->hasDefinition() ||
      !is_user_decl(record, ctx_.getSourceManager())) {
    return;
  }
  clang::DeclarationName name = ctx_.DeclarationNames.getCXXOperatorName(clang::OO_Call);
  for (const clang::NamedDecl* decl : record->lookup(name)) {
    if (const auto* method = llvm::dyn_cast<clang::CXXMethodDecl>(decl)) call(method, facts);
    if (const auto* templ = llvm::dyn_cast<clang::FunctionTemplateDecl>(decl)) {
      for (const clang::FunctionDecl* specialization : templ->specializations()) {
        call(specialization, facts);
      }
    }
  }
}

void CallGraph::walk(const clang::FunctionDecl* fn, std::map<std::string, FunctionFacts>& out) {
  FunctionFacts& facts = out[function_key(fn)];
  facts.name = display_name(fn);
  facts.where = location_of(ctx_.getSourceManager(), fn->getLocation());
  facts.defined = true;
  if (const auto* method = llvm::dyn_cast<clang::CXXMethodDecl>(fn)) {
    for (const clang::CXXMethodDecl* base : method->overridden_methods()) {
      facts.overrides.push_back(function_key(base));
    }
  }
  BodyWalker walker(*this, facts.body);
  if (const auto* ctor = llvm::dyn_cast<clang::CXXConstructorDecl>(fn)) {
    for (const clang::CXXCtorInitializer* init : ctor->inits()) {
      if (init->isWritten()) walker.TraverseStmt(init->getInit());
    }
  }
  walker.TraverseStmt(fn->getBody());
}

void CallGraph::drain(std::map<std::string, FunctionFacts>& out) {
  while (!queue_.empty()) {
    const clang::FunctionDecl* fn = queue_.front();
    queue_.pop_front();
    walk(fn, out);
  }
  // Callees without a body here: a declaration entry, unless this unit defines them.
  for (const auto& [key, fn] : undrained_) {
    FunctionFacts& facts = out[key];
    if (facts.defined) continue;
    facts.name = display_name(fn);
    facts.where = location_of(ctx_.getSourceManager(), fn->getLocation());
  }
  undrained_.clear();
}

void CallGraph::build(std::map<std::string, FunctionFacts>& out) {
  std::vector<const clang::FunctionDecl*> definitions;
  Definitions(ctx_.getSourceManager(), definitions).TraverseAST(ctx_);
  for (const clang::FunctionDecl* fn : definitions) {
    if (queued_.insert(fn).second) queue_.push_back(fn);
  }
  drain(out);
}

BodyFacts CallGraph::mapped(const clang::Expr* f, std::map<std::string, FunctionFacts>& out) {
  BodyFacts facts;
  BodyWalker(*this, facts).TraverseStmt(const_cast<clang::Expr*>(f));
  call_operators(f->getType(), facts);
  drain(out);
  return facts;
}

std::optional<Location> CallGraph::site_of(const clang::Expr* e) const {
  for (int depth = 0; depth < 16 && e != nullptr; ++depth) {
    e = spelled(e);
    if (const clang::CallExpr* call = as_pmap_call(e)) {
      return location_of(ctx_.getSourceManager(), call->getBeginLoc());
    }
    if (const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(e)) {
      const auto* var = llvm::dyn_cast<clang::VarDecl>(ref->getDecl());
      if (var == nullptr || llvm::isa<clang::ParmVarDecl>(var)) return std::nullopt;
      e = var->getInit();
    } else if (const auto* member = llvm::dyn_cast<clang::MemberExpr>(e)) {
      const auto* field = llvm::dyn_cast<clang::FieldDecl>(member->getMemberDecl());
      if (field == nullptr || !field->hasInClassInitializer()) return std::nullopt;
      e = field->getInClassInitializer();
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace spmd::migrate
