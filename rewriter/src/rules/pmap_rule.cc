// SPDX-License-Identifier: Apache-2.0
// Rule pmap (pmap_rule.h): finds how each pmap construct is used, checks that every option is
// known and every out_axes=nullopt output provably replicated, and replaces the pmap(...)
// expression with the code of pmap_codegen.h; or reports why not. Whether a site is finally
// migrated is decided for the whole run (nesting.h), from the outcome and call graph facts
// recorded here.
#include "rules/pmap_rule.h"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Lex/Lexer.h>

#include <map>
#include <set>
#include <variant>

#include "rules/parent_index.h"
#include "rules/pmap_analysis.h"
#include "rules/pmap_call_graph.h"
#include "rules/pmap_codegen.h"

namespace spmd::migrate {

using namespace clang::ast_matchers;

namespace {

// Why a site is left for a human: the rule id and the message (reason and manual fix).
struct Refusal {
  std::string rule;
  std::string message;
};

const char* kTemplateMessage =
    "this pmap is inside a template, where its types depend on template parameters; migrate it "
    "by hand (see docs/migration.md)";

const char* kHandFix = "migrate it by hand to spmd::shard_map (see docs/migration.md)";

// A pmap construct under analysis: the outermost pmap(...) of an inline nest.
struct Site {
  const clang::CallExpr* pmap = nullptr;
  std::vector<PmapLevelInfo> levels;          // its own levels, outer first
  const clang::Expr* fun = nullptr;           // the innermost function it maps, as written
  const clang::VarDecl* var = nullptr;        // the variable keeping the callable, if any
  std::vector<const clang::CallExpr*> calls;  // every call of the callable
  std::vector<size_t> outers;                 // sites whose mapped function is `var`
  std::optional<size_t> inner;                // the site whose variable is `fun`
  std::optional<Refusal> refusal;
  // Kept in a variable that only other pmaps map: it becomes its function, and they the nest.
  bool absorbed() const { return var != nullptr && calls.empty() && !outers.empty(); }
};

// The whole nest a site maps, through the variables of inner sites.
struct Chain {
  std::vector<PmapLevelInfo> levels;    // every level, outer first
  const clang::Expr* fun = nullptr;     // the innermost function
  const clang::Expr* callee = nullptr;  // what the migrated code calls, as written
  bool through_absorbed = true;         // every variable on the way is absorbed
};

bool is_implicit(const clang::Stmt* s) {
  if (llvm::isa<clang::ImplicitCastExpr, clang::MaterializeTemporaryExpr,
                clang::CXXBindTemporaryExpr, clang::ExprWithCleanups, clang::ParenExpr>(s)) {
    return true;
  }
  const auto* construct = llvm::dyn_cast<clang::CXXConstructExpr>(s);
  return construct != nullptr && construct->getNumArgs() == 1 &&
         !llvm::isa<clang::CXXTemporaryObjectExpr>(construct);
}

// The first parent of `node` that the source spells (past casts, temporaries, copies).
clang::DynTypedNode spelled_parent(const clang::Stmt* node, const ParentIndex& parents) {
  clang::DynTypedNode current = clang::DynTypedNode::create(*node);
  while (true) {
    clang::DynTypedNode parent = parents.parent(current);
    const auto* stmt = parent.get<clang::Stmt>();
    if (stmt == nullptr || !is_implicit(stmt)) return parent;
    current = parent;
  }
}

// `node` when it calls the callable `object`: `object(args)` (a plain call expression in a
// template, where the call is not resolved yet).
const clang::CallExpr* call_of(const clang::DynTypedNode& node, const clang::Expr* object) {
  const auto* call = node.get<clang::CallExpr>();
  if (call == nullptr) return nullptr;
  const clang::Expr* callee = nullptr;
  if (const auto* op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(call)) {
    if (op->getOperator() != clang::OO_Call || op->getNumArgs() == 0) return nullptr;
    callee = op->getArg(0);
  } else if (call->isTypeDependent() || call->isValueDependent()) {
    callee = call->getCallee();
  } else {
    return nullptr;
  }
  while (callee != object && is_implicit(callee)) {
    callee = llvm::cast<clang::Expr>(*callee->child_begin());
  }
  return callee == object ? call : nullptr;
}

// The functions a statement sits in, innermost first (lambda bodies included).
std::vector<const clang::FunctionDecl*> enclosing_functions(const clang::Stmt* s,
                                                            const ParentIndex& parents) {
  std::vector<const clang::FunctionDecl*> out;
  clang::DynTypedNode node = clang::DynTypedNode::create(*s);
  for (int depth = 0; depth < 512; ++depth) {
    node = parents.parent(node);
    if (node.getNodeKind().isNone()) break;
    if (const auto* lambda = node.get<clang::LambdaExpr>()) {
      out.push_back(lambda->getCallOperator());
    }
    if (const auto* fn = node.get<clang::FunctionDecl>()) out.push_back(fn);
  }
  return out;
}

std::string source(const clang::Expr* e, const clang::ASTContext& ctx) {
  clang::CharSourceRange range =
      clang::Lexer::makeFileCharRange(clang::CharSourceRange::getTokenRange(e->getSourceRange()),
                                      ctx.getSourceManager(), ctx.getLangOpts());
  return clang::Lexer::getSourceText(range, ctx.getSourceManager(), ctx.getLangOpts()).str();
}

std::string line_of(const clang::Stmt* s, const clang::ASTContext& ctx) {
  const clang::SourceManager& sm = ctx.getSourceManager();
  return "line " + std::to_string(sm.getSpellingLineNumber(sm.getFileLoc(s->getBeginLoc())));
}

// A declaration's qualified name, without "(anonymous namespace)::".
std::string readable_name(const clang::NamedDecl* decl) {
  std::string name = decl->getQualifiedNameAsString();
  const std::string anonymous = "(anonymous namespace)::";
  for (size_t at = name.find(anonymous); at != std::string::npos; at = name.find(anonymous)) {
    name.erase(at, anonymous.size());
  }
  return name;
}

// What the code does with a pmap callable at `parent` (the first spelled parent of the
// expression `use`), as the tool saw it: "passed to 'apply_to'", "returned from 'make'".
std::string describe_use(const clang::DynTypedNode& parent, const clang::Expr* use,
                         clang::ASTContext& ctx, const ParentIndex& parents) {
  if (const auto* member = parent.get<clang::MemberExpr>()) {
    return "used through its member '" + member->getMemberDecl()->getNameAsString() + "'";
  }
  if (const auto* op = parent.get<clang::CXXOperatorCallExpr>()) {
    if (op->isAssignmentOp()) return "assigned to '" + source(op->getArg(0), ctx) + "'";
  }
  if (const auto* call = parent.get<clang::CallExpr>()) {
    const clang::FunctionDecl* callee = call->getDirectCallee();
    return callee == nullptr ? "passed to a function" : "passed to '" + readable_name(callee) + "'";
  }
  if (const auto* construct = parent.get<clang::CXXConstructExpr>()) {
    return "passed to a constructor of '" + construct->getType().getAsString() + "'";
  }
  if (const auto* ret = parent.get<clang::ReturnStmt>()) {
    std::vector<const clang::FunctionDecl*> in = enclosing_functions(ret, parents);
    if (in.empty() || (llvm::isa<clang::CXXMethodDecl>(in[0]) &&
                       llvm::cast<clang::CXXMethodDecl>(in[0])->getParent()->isLambda())) {
      return "returned from a lambda";
    }
    return "returned from '" + readable_name(in[0]) + "'";
  }
  if (const auto* var = parent.get<clang::VarDecl>()) {
    return "copied into the variable '" + var->getNameAsString() + "'";
  }
  if (const auto* field = parent.get<clang::FieldDecl>()) {
    return "stored in the member '" + field->getNameAsString() + "' of '" +
           field->getParent()->getNameAsString() + "'";
  }
  if (const auto* init = parent.get<clang::CXXCtorInitializer>()) {
    if (init->getMember() != nullptr) {
      return "stored in the member '" + init->getMember()->getNameAsString() + "' of '" +
             init->getMember()->getParent()->getNameAsString() + "'";
    }
  }
  if (const auto* binary = parent.get<clang::BinaryOperator>()) {
    if (binary->isAssignmentOp()) return "assigned to '" + source(binary->getLHS(), ctx) + "'";
  }
  if (const auto* unary = parent.get<clang::UnaryOperator>()) {
    if (unary->getOpcode() == clang::UO_AddrOf) return "used through its address";
  }
  if (parent.get<clang::InitListExpr>() != nullptr) return "put in a braced initializer list";
  if (parent.get<clang::LambdaExpr>() != nullptr) return "captured by a lambda";
  (void)use;
  return "used in an expression the tool does not follow";
}

// When the pmap(...) expression is in an unevaluated operand (decltype, sizeof): what names it.
std::optional<std::string> unevaluated_use(const clang::CallExpr* call,
                                           const ParentIndex& parents) {
  clang::DynTypedNode node = clang::DynTypedNode::create(*call);
  bool in_type = false;
  for (int depth = 0; depth < 256; ++depth) {
    node = parents.parent(node);
    if (node.getNodeKind().isNone()) break;
    if (node.get<clang::TypeLoc>() != nullptr) in_type = true;
    if (const auto* trait = node.get<clang::UnaryExprOrTypeTraitExpr>()) {
      (void)trait;
      return std::string("an operand of sizeof or alignof");
    }
    const auto* decl = node.get<clang::Decl>();
    if (decl == nullptr) continue;
    if (!in_type) return std::nullopt;
    if (const auto* field = llvm::dyn_cast<clang::FieldDecl>(decl)) {
      return "the decltype(...) naming the type of the member '" + field->getNameAsString() +
             "' of '" + field->getParent()->getNameAsString() + "'";
    }
    if (const auto* named = llvm::dyn_cast<clang::NamedDecl>(decl)) {
      return "the decltype(...) in the declaration of '" + named->getNameAsString() + "'";
    }
    return std::string("a decltype(...)");
  }
  return in_type ? std::optional<std::string>("a decltype(...)") : std::nullopt;
}

// The record a type names, looking through references and qualifiers.
const clang::CXXRecordDecl* record_of(clang::QualType type) {
  return type.getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl();
}

bool is_std(const clang::CXXRecordDecl* record, llvm::StringRef name) {
  return record != nullptr && record->getName() == name && record->isInStdNamespace();
}

bool is_array(clang::QualType type) {
  const clang::CXXRecordDecl* record = record_of(type);
  return record != nullptr && record->getQualifiedNameAsString() == "spmd::Array";
}

// What the pmap-ed callable is called with and returns, at one call.
struct CallShape {
  std::vector<bool> arg_is_array;
  OutputKind output_kind = OutputKind::kArray;
  size_t num_outputs = 1;
  bool operator==(const CallShape& o) const {
    return arg_is_array == o.arg_is_array && output_kind == o.output_kind &&
           num_outputs == o.num_outputs;
  }
};

std::variant<CallShape, Refusal> call_shape(const clang::CallExpr* call) {
  const auto* op = llvm::dyn_cast<clang::CXXOperatorCallExpr>(call);
  Refusal dependent{"pmap-template",
                    "this pmap callable is called with arguments whose types depend on a "
                    "template parameter, so the tool cannot tell mapped arrays from static "
                    "arguments; migrate it by hand (see docs/migration.md)"};
  if (op == nullptr) return dependent;
  CallShape shape;
  for (unsigned i = 1; i < op->getNumArgs(); ++i) {
    clang::QualType type = op->getArg(i)->IgnoreImplicit()->getType();
    if (type->isDependentType()) return dependent;
    shape.arg_is_array.push_back(is_array(type));
  }
  clang::QualType result = op->getType();
  const clang::CXXRecordDecl* record = record_of(result);
  if (result->isVoidType()) {
    shape.output_kind = OutputKind::kVoid;
    shape.num_outputs = 0;
  } else if (is_std(record, "tuple")) {
    const auto* spec = llvm::cast<clang::ClassTemplateSpecializationDecl>(record);
    shape.output_kind = OutputKind::kTuple;
    shape.num_outputs = spec->getTemplateArgs()[0].pack_size();
  } else if (is_std(record, "vector")) {
    shape.output_kind = OutputKind::kVector;
  }
  return shape;
}

std::string axis_list(const std::vector<std::optional<int>>& axes) {
  std::string out;
  for (const std::optional<int>& a : axes) {
    out += (out.empty() ? "" : ", ") + (a ? std::to_string(*a) : std::string("std::nullopt"));
  }
  return "{" + out + "}";
}

// in_axes or out_axes of one level, one entry per value: pmap's rule is one entry for all, or one
// per value.
std::variant<std::vector<std::optional<int>>, Refusal> per_value(
    const std::vector<std::optional<int>>& axes, size_t count, const char* what,
    const char* values) {
  for (const std::optional<int>& a : axes) {
    if (a && *a < 0) {
      return Refusal{"pmap-negative-axis",
                     std::string(what) + " " + axis_list(axes) +
                         " has a negative entry, which pmap counts from the end of each value's "
                         "rank; write the non-negative axis (rank + axis) and run the tool again"};
    }
  }
  if (axes.size() == 1) return std::vector<std::optional<int>>(count, axes[0]);
  if (axes.size() == count) return axes;
  return Refusal{"pmap-options", std::string(what) + " " + axis_list(axes) + " has " +
                                     std::to_string(axes.size()) + " entries but the callable " +
                                     "has " + std::to_string(count) + " " + values +
                                     ", so pmap raises ValueError at the call; fix " + what};
}

// Checks a whole nest and turns it into the generator's PmapSite.
class SiteBuilder {
 public:
  SiteBuilder(const Site& site, const Chain& chain, clang::ASTContext& ctx)
      : site_(site), chain_(chain), ctx_(ctx) {}

  // The PmapSite for the generator, or why there is none.
  std::variant<PmapSite, Refusal> build() {
    for (size_t l = 1; l < chain_.levels.size(); ++l) {
      if (!chain_.levels[l].devices.empty() || !chain_.levels[l].donate_argnums.empty()) {
        return Refusal{"pmap-nested",
                       "an inner pmap of a nest gives devices or donate_argnums, which belong to "
                       "the outer pmap (the nest runs as one shard_map over one mesh); move them "
                       "to the outermost pmap"};
      }
    }
    std::variant<CallShape, Refusal> shape = call_shape(site_.calls[0]);
    if (auto* refusal = std::get_if<Refusal>(&shape)) return *refusal;
    shape_ = std::get<CallShape>(shape);
    for (const clang::CallExpr* call : site_.calls) {
      std::variant<CallShape, Refusal> other = call_shape(call);
      if (auto* refusal = std::get_if<Refusal>(&other)) return *refusal;
      if (!(std::get<CallShape>(other) == shape_)) {
        return Refusal{"pmap-escape",
                       "this pmap callable is called with different argument kinds (Array or "
                       "not) or result types at different calls; migrate it by hand"};
      }
    }
    PmapSite out;
    out.fun = source(chain_.callee, ctx_);
    out.devices = chain_.levels[0].devices;
    out.arg_is_array = shape_.arg_is_array;
    out.output_kind = shape_.output_kind;
    out.num_outputs = shape_.num_outputs;
    out.donate_argnums = chain_.levels[0].donate_argnums;
    for (size_t l = 0; l < chain_.levels.size(); ++l) {
      std::variant<PmapSite::Level, Refusal> level = build_level(l);
      if (auto* refusal = std::get_if<Refusal>(&level)) return *refusal;
      out.levels.push_back(std::get<PmapSite::Level>(level));
    }
    return out;
  }

 private:
  size_t num_arrays() const {
    return std::count(shape_.arg_is_array.begin(), shape_.arg_is_array.end(), true);
  }

  std::variant<PmapSite::Level, Refusal> build_level(size_t l) {
    const PmapLevelInfo& info = chain_.levels[l];
    PmapSite::Level level;
    level.axis =
        info.axis.empty() ? "_pmap" + (l == 0 ? std::string() : std::to_string(l)) : info.axis;
    level.axis_size = info.axis_size;
    auto in_axes = per_value(info.in_axes, num_arrays(), "in_axes", "Array arguments");
    if (auto* refusal = std::get_if<Refusal>(&in_axes)) return *refusal;
    level.in_axes = std::get<0>(in_axes);
    if (shape_.output_kind != OutputKind::kVoid) {
      auto out_axes = per_value(info.out_axes, shape_.num_outputs, "out_axes", "outputs");
      if (auto* refusal = std::get_if<Refusal>(&out_axes)) return *refusal;
      level.out_axes = std::get<0>(out_axes);
    }
    bool mapped = false;
    for (const std::optional<int>& a : level.in_axes) mapped = mapped || a.has_value();
    if (!mapped) {
      return Refusal{"pmap-options",
                     "no Array argument is mapped over axis '" + level.axis +
                         "', so pmap raises ValueError ('pmap must have at least one non-None "
                         "value in in_axes') at every call, axis_size or not; map an argument"};
    }
    for (size_t o = 0; o < level.out_axes.size(); ++o) {
      if (level.out_axes[o] || replicated(level, o)) continue;
      return Refusal{
          "pmap-out-axes-none",
          "out_axes=std::nullopt returns device 0's value of output " + std::to_string(o) +
              ", and the tool cannot prove every device along '" + level.axis +
              "' computes the same value (pmap never checked); make the output replicated "
              "(psum/pmean/all_gather over '" +
              level.axis + "') or give it an integer out_axes"};
    }
    return level;
  }

  bool replicated(const PmapSite::Level& level, size_t output) {
    std::vector<bool> varying;
    for (size_t i = 0, ordinal = 0; i < shape_.arg_is_array.size(); ++i) {
      varying.push_back(shape_.arg_is_array[i] && level.in_axes[ordinal++].has_value());
      if (!shape_.arg_is_array[i]) --ordinal;
    }
    size_t outputs = shape_.output_kind == OutputKind::kTuple ? shape_.num_outputs : 1;
    return provably_replicated(mapped_body(chain_.fun), output, outputs, varying, level.axis, ctx_);
  }

  const Site& site_;
  const Chain& chain_;
  clang::ASTContext& ctx_;
  CallShape shape_;
};

// Every use of a variable holding a pmap callable, over the user's code of the unit.
class VariableUses : public clang::RecursiveASTVisitor<VariableUses> {
 public:
  VariableUses(const clang::SourceManager& sm,
               std::map<const clang::VarDecl*, std::vector<const clang::DeclRefExpr*>>& out)
      : sm_(sm), out_(out) {}

  bool TraverseDecl(clang::Decl* decl) {
    if (decl == nullptr) return true;
    if (!llvm::isa<clang::TranslationUnitDecl>(decl)) {
      clang::SourceLocation loc = decl->getLocation();
      if (loc.isValid() && sm_.isInSystemHeader(sm_.getExpansionLoc(loc))) return true;
      if (const auto* ns = llvm::dyn_cast<clang::NamespaceDecl>(decl)) {
        if (ns->getParent()->isTranslationUnit() &&
            (ns->getName() == "spmd" || ns->getName() == "std")) {
          return true;
        }
      }
    }
    return RecursiveASTVisitor::TraverseDecl(decl);
  }

  bool VisitDeclRefExpr(clang::DeclRefExpr* ref) {
    const auto* var = llvm::dyn_cast<clang::VarDecl>(ref->getDecl());
    if (var != nullptr && is_pmapped_type(var->getType())) out_[var].push_back(ref);
    return true;
  }

 private:
  const clang::SourceManager& sm_;
  std::map<const clang::VarDecl*, std::vector<const clang::DeclRefExpr*>>& out_;
};

class Analysis {
 public:
  Analysis(clang::ASTContext& ctx, Sink& sink)
      : ctx_(ctx), sm_(ctx.getSourceManager()), sink_(sink), parents_(ctx) {}

  void run(const std::vector<const clang::CallExpr*>& matched) {
    // The matcher also finds the pmaps of template instantiations: copies of the template's own
    // pmaps, which are analysed (and refused) in the template. Only indexed calls count.
    std::vector<const clang::CallExpr*> calls;
    for (const clang::CallExpr* call : matched) {
      if (parents_.contains(call)) calls.push_back(call);
    }
    CallGraph graph(ctx_);
    graph.build(sink_.functions());
    VariableUses(sm_, uses_).TraverseAST(ctx_);
    std::set<const clang::CallExpr*> inner;
    for (const clang::CallExpr* call : calls) {
      for (const clang::CallExpr* f = as_pmap_call(call->getArg(0)); f != nullptr;
           f = as_pmap_call(f->getArg(0))) {
        inner.insert(f);
      }
    }
    for (const clang::CallExpr* call : calls) {
      if (inner.count(call) != 0) continue;
      if (std::optional<std::string> type = unevaluated_use(call, parents_)) {
        refuse_unevaluated(call, *type);
        continue;
      }
      sites_.emplace_back().pmap = call;
      Site& site = sites_.back();
      for (const clang::CallExpr* level = call; level != nullptr;
           level = as_pmap_call(level->getArg(0))) {
        site_of_call_[level] = sites_.size() - 1;
      }
      site.refusal = analyse(site);
    }
    for (size_t s = 0; s < sites_.size(); ++s) find_calls(s);
    for (size_t s = 0; s < sites_.size(); ++s) {
      Site& site = sites_[s];
      if (!site.refusal && site.var != nullptr && site.calls.empty() && site.outers.empty()) {
        site.refusal = Refusal{"pmap-escape", "the pmap callable '" + site.var->getNameAsString() +
                                                  "' is never called, so its argument kinds are "
                                                  "unknown; remove it or migrate it by hand"};
      }
    }
    for (size_t s = 0; s < sites_.size(); ++s) record(s, graph);
  }

 private:
  // Reads the levels of one site and where its callable goes; the refusal when out of reach.
  std::optional<Refusal> analyse(Site& site) {
    for (const clang::CallExpr* level = site.pmap; level != nullptr;
         level = as_pmap_call(level->getArg(0))) {
      site.fun = level->getArg(0);
    }
    for (clang::SourceLocation loc : {site.pmap->getBeginLoc(), site.pmap->getEndLoc()}) {
      if (loc.isMacroID()) {
        return Refusal{"pmap-macro",
                       "this pmap is written inside a macro, so the tool leaves it as is; expand "
                       "the macro at this site, or migrate it by hand to spmd::shard_map (see "
                       "docs/migration.md)"};
      }
    }
    for (const clang::FunctionDecl* fn : enclosing_functions(site.pmap, parents_)) {
      if (fn->isTemplated()) return Refusal{"pmap-template", kTemplateMessage};
    }
    for (const clang::CallExpr* level = site.pmap; level != nullptr;
         level = as_pmap_call(level->getArg(0))) {
      std::variant<PmapLevelInfo, std::string> info = read_level(level, ctx_);
      if (auto* reason = std::get_if<std::string>(&info)) return Refusal{"pmap-options", *reason};
      site.levels.push_back(std::get<PmapLevelInfo>(info));
    }
    return where_it_goes(site);
  }

  // Called at once, or kept in a variable whose uses find_calls reads; else why not.
  std::optional<Refusal> where_it_goes(Site& site) {
    clang::DynTypedNode parent = spelled_parent(site.pmap, parents_);
    if (const clang::CallExpr* call = call_of(parent, site.pmap)) {
      site.calls.push_back(call);
      return std::nullopt;
    }
    const auto* var = parent.get<clang::VarDecl>();
    if (var == nullptr) {
      return Refusal{"pmap-escape", "the pmap callable is " +
                                        describe_use(parent, site.pmap, ctx_, parents_) +
                                        ", where the tool cannot see its calls; keep it in a "
                                        "local 'auto' variable that is only called, or " +
                                        kHandFix};
    }
    std::string name = "the pmap callable '" + var->getNameAsString() + "'";
    if (var->getTypeSourceInfo() == nullptr ||
        var->getTypeSourceInfo()->getType()->getContainedAutoType() == nullptr) {
      return Refusal{"pmap-escape", name + " is declared with the explicit type '" +
                                        var->getType().getAsString() +
                                        "', which the migrated code (a lambda) cannot keep; "
                                        "declare it 'auto'"};
    }
    if (var->isStaticDataMember()) {
      return Refusal{"pmap-escape",
                     name + " is a static member of '" +
                         llvm::cast<clang::NamedDecl>(var->getDeclContext())->getNameAsString() +
                         "', which other files may use where this run cannot "
                         "see; keep it in a local 'auto' variable, or " +
                         kHandFix};
    }
    if (!var->isLocalVarDecl() && var->isExternallyVisible()) {
      return Refusal{"pmap-escape",
                     name +
                         " is a namespace-scope variable with external linkage, which other "
                         "files may use where this run cannot see; give it internal linkage "
                         "(static, or an unnamed namespace) so that the tool sees every use, "
                         "or " +
                         kHandFix};
    }
    site.var = var;
    return std::nullopt;
  }

  // The calls of a variable's callable; the sites mapping it link to it as a nest.
  void find_calls(size_t s) {
    Site& site = sites_[s];
    if (site.var == nullptr || site.refusal) return;
    for (const clang::DeclRefExpr* ref : uses_[site.var]) {
      clang::DynTypedNode parent = spelled_parent(ref, parents_);
      if (const clang::CallExpr* call = call_of(parent, ref)) {
        site.calls.push_back(call);
        continue;
      }
      if (parent.get<clang::LambdaExpr>() != nullptr) continue;  // a capture: its calls count
      const auto* pmap = parent.get<clang::CallExpr>();
      auto outer = pmap == nullptr ? site_of_call_.end() : site_of_call_.find(pmap);
      if (outer != site_of_call_.end() && spelled(pmap->getArg(0)) == ref &&
          spelled(sites_[outer->second].fun) == ref) {
        site.outers.push_back(outer->second);
        sites_[outer->second].inner = s;
        continue;
      }
      site.refusal = Refusal{
          "pmap-escape", "the pmap callable '" + site.var->getNameAsString() + "' is " +
                             describe_use(parent, ref, ctx_, parents_) + " (" + line_of(ref, ctx_) +
                             "), where the tool cannot see its calls; call it "
                             "only directly, or " +
                             kHandFix};
      return;
    }
  }

  // The nest site `s` maps, through the variables of absorbed or directly called inner sites.
  std::variant<Chain, Refusal> chain(size_t s, int depth = 0) {
    const Site& site = sites_[s];
    Chain out;
    out.levels = site.levels;
    out.fun = out.callee = site.fun;
    if (!site.inner) return out;
    const Site& inner = sites_[*site.inner];
    std::string name = inner.var->getNameAsString();
    if (inner.refusal || depth > 32) {
      return Refusal{"pmap-nested", "the function this pmap maps is the pmap callable '" + name +
                                        "', which is left as is (see its warning); the levels "
                                        "of a nest are migrated together or not at all"};
    }
    std::variant<Chain, Refusal> rest = chain(*site.inner, depth + 1);
    if (auto* refusal = std::get_if<Refusal>(&rest)) return *refusal;
    Chain& nest = std::get<Chain>(rest);
    out.levels.insert(out.levels.end(), nest.levels.begin(), nest.levels.end());
    out.fun = nest.fun;
    out.through_absorbed = inner.absorbed() && nest.through_absorbed;
    if (out.through_absorbed) return out;
    // `name` stays a pmap callable (it is also called directly): the nest needs its function
    // again, by a name that means the same here.
    out.callee = nest.callee;
    if (!names_the_same(nest.callee, site)) {
      return Refusal{"pmap-nested",
                     "the pmap callable '" + name +
                         "' is mapped by this pmap and also called directly, so the nest must "
                         "name its function again, and that function is written in place or its "
                         "name means something else here; give it a name of its own (auto body "
                         "= ...;) and run the tool again"};
    }
    return out;
  }

  // The function site `s` maps, through the variables of inner sites (left or not): what its
  // calls run.
  const clang::Expr* innermost_function(size_t s) const {
    for (int depth = 0; sites_[s].inner && depth < 32; ++depth) s = *sites_[s].inner;
    return sites_[s].fun;
  }

  // True when `e` is a name (or &name) that means the same at `site` as where it is written.
  bool names_the_same(const clang::Expr* e, const Site& site) {
    e = spelled(e);
    if (const auto* unary = llvm::dyn_cast<clang::UnaryOperator>(e)) {
      if (unary->getOpcode() == clang::UO_AddrOf) e = spelled(unary->getSubExpr());
    }
    const auto* ref = llvm::dyn_cast<clang::DeclRefExpr>(e);
    if (ref == nullptr || ref->hasQualifier()) return ref != nullptr;
    std::vector<const clang::FunctionDecl*> in = enclosing_functions(site.pmap, parents_);
    if (in.empty()) return false;
    struct Shadows : clang::RecursiveASTVisitor<Shadows> {
      const clang::NamedDecl* decl;
      bool found = false;
      bool VisitNamedDecl(clang::NamedDecl* other) {
        found = found || (other != decl && other->getDeclName() == decl->getDeclName());
        return true;
      }
    } shadows;
    shadows.decl = ref->getDecl();
    shadows.TraverseDecl(const_cast<clang::FunctionDecl*>(in.back()));
    return !shadows.found;
  }

  // Records the outcome of site `s` and its mapped function's call graph facts.
  void record(size_t s, CallGraph& graph) {
    Site& site = sites_[s];
    SiteOutcome& out = sink_.site(sm_, site.pmap->getBeginLoc());
    for (size_t o : site.outers) out.nest.insert(location_of(sm_, sites_[o].pmap->getBeginLoc()));
    if (site.inner) out.nest.insert(location_of(sm_, sites_[*site.inner].pmap->getBeginLoc()));
    std::variant<Chain, Refusal> nest =
        site.refusal ? std::variant<Chain, Refusal>(*site.refusal) : chain(s);
    out.body = graph.mapped(innermost_function(s), sink_.functions());
    if (const Chain* c = std::get_if<Chain>(&nest)) nest = rewrite(site, *c, out);
    if (const auto* refusal = std::get_if<Refusal>(&nest)) {
      out.refused = true;
      out.report.rule = refusal->rule;
      out.report.message = refusal->message;
    }
  }

  // The edits of a site; the refusal when some option rules it out.
  // The edits of a site, both as a plain pmap and as a level of an imperfect nest (which one
  // applies is decided for the whole run, nesting.h); the refusal when some option rules it out.
  std::variant<Chain, Refusal> rewrite(const Site& site, const Chain& nest, SiteOutcome& out) {
    EditBatch edits(sink_, sm_, ctx_.getLangOpts());
    EditBatch nest_edits(sink_, sm_, ctx_.getLangOpts());
    clang::CharSourceRange range =
        clang::CharSourceRange::getTokenRange(site.pmap->getSourceRange());
    if (site.absorbed()) {
      // The nest is written at its pmaps.
      std::optional<std::string> fun = copied(site.fun, out);
      if (!fun) return macro_refusal();
      edits.replace(range, *fun);
      nest_edits.replace(range, *fun);
    } else {
      std::variant<PmapSite, Refusal> built = SiteBuilder(site, nest, ctx_).build();
      if (auto* refusal = std::get_if<Refusal>(&built)) return *refusal;
      PmapSite& code = std::get<PmapSite>(built);
      std::optional<std::string> fun = copied(nest.callee, out);
      if (!fun) return macro_refusal();
      code.fun = *fun;
      clang::SourceLocation begin = site.pmap->getBeginLoc();
      edits.replace(range, generate_shard_map(code, indentation(begin)));
      code.nest_level = true;
      nest_edits.replace(range, generate_shard_map(code, indentation(begin)));
      out.includes.emplace(location_of(sm_, begin).path, "spmd/spmd.h");
      if (!code.donate_argnums.empty()) {
        out.nest_unfit =
            "it donates arguments (donate_argnums), which legacy pmap ignores in a pmap that runs "
            "inside another pmap's function but a migrated level would not";
      }
    }
    if (!edits.commit_to(out.edits) || !nest_edits.commit_to(out.nest_edits)) {
      return macro_refusal();
    }
    return nest;
  }

  // The source of `e`, which the site's code copies, with the other rules' edits of it (a pvary
  // in the mapped lambda) applied and noted as absorbed by the site.
  std::optional<std::string> copied(const clang::Expr* e, SiteOutcome& out) {
    return sink_.edited_text(sm_, ctx_.getLangOpts(),
                             clang::CharSourceRange::getTokenRange(e->getSourceRange()),
                             out.absorbed);
  }

  static Refusal macro_refusal() {
    return Refusal{"pmap-macro",
                   "part of this pmap is produced by a macro, so the tool cannot edit it; "
                   "expand the macro at this site, or migrate it by hand"};
  }

  void refuse_unevaluated(const clang::CallExpr* call, const std::string& where) {
    SiteOutcome& out = sink_.site(sm_, call->getBeginLoc());  // never runs: no call graph facts
    out.refused = true;
    out.report.rule = "pmap-escape";
    out.report.message =
        "this pmap is only " + where +
        ": it never runs, and it names the type of a pmap callable, which the migrated code (a "
        "lambda) cannot keep; hold the callable in a std::function (or a template parameter), "
        "or " +
        kHandFix;
  }

  // The indentation of the line `loc` is on.
  std::string indentation(clang::SourceLocation loc) const {
    llvm::StringRef buffer = sm_.getBufferData(sm_.getFileID(loc));
    size_t offset = sm_.getFileOffset(loc);
    size_t start = offset == 0 ? llvm::StringRef::npos : buffer.find_last_of("\r\n", offset - 1);
    start = start == llvm::StringRef::npos ? 0 : start + 1;
    size_t stop = start;
    while (stop < offset && (buffer[stop] == ' ' || buffer[stop] == '\t')) ++stop;
    return buffer.substr(start, stop - start).str();
  }

  clang::ASTContext& ctx_;
  const clang::SourceManager& sm_;
  Sink& sink_;
  ParentIndex parents_;
  std::vector<Site> sites_;
  std::map<const clang::CallExpr*, size_t> site_of_call_;  // every level of a site -> the site
  std::map<const clang::VarDecl*, std::vector<const clang::DeclRefExpr*>> uses_;
};

}  // namespace

void PmapRule::register_matchers(MatchFinder& finder) {
  finder.addMatcher(
      // Not unless(isInTemplateInstantiation()): it builds clang's parent map of the whole unit
      // (Analysis::run leaves those calls out with its own index instead).
      callExpr(callee(functionDecl(hasName("::spmd::pmap"))), unless(isExpansionInSystemHeader()))
          .bind("pmap"),
      this);
  finder.addMatcher(unresolvedLookupExpr(hasAnyDeclaration(namedDecl(hasName("::spmd::pmap"))),
                                         unless(isExpansionInSystemHeader()))
                        .bind("dependent"),
                    this);
  // Every unit, so that its call graph is recorded even when it has no pmap.
  finder.addMatcher(translationUnitDecl().bind("unit"), this);
}

void PmapRule::run(const MatchFinder::MatchResult& result) {
  context_ = result.Context;
  if (const auto* call = result.Nodes.getNodeAs<clang::CallExpr>("pmap")) calls_.push_back(call);
  if (const auto* ref = result.Nodes.getNodeAs<clang::Expr>("dependent")) {
    sink().warn(*result.SourceManager, ref->getBeginLoc(), "pmap-template", kTemplateMessage);
  }
}

void PmapRule::onEndOfTranslationUnit() {
  if (context_ == nullptr) return;
  Analysis(*context_, sink()).run(calls_);
  calls_.clear();
}

}  // namespace spmd::migrate
