// Rule pmap (pmap_rule.h): finds how each pmap construct is used, checks that every option is
// known and every out_axes=nullopt output provably replicated, and replaces the pmap(...)
// expression with the code of pmap_codegen.h; or reports why not.
#include "rules/pmap_rule.h"

#include <clang/AST/DeclCXX.h>
#include <clang/AST/DeclTemplate.h>
#include <clang/AST/ExprCXX.h>
#include <clang/AST/ParentMapContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Lex/Lexer.h>

#include <map>
#include <set>
#include <variant>

#include "rules/pmap_analysis.h"
#include "rules/pmap_codegen.h"

namespace spmd::migrate {

using namespace clang::ast_matchers;

namespace {

// Why a site is left for a human: the rule id and the message (reason and manual fix).
struct Refusal {
  std::string rule;
  std::string message;
};

// A pmap construct under analysis.
struct Site {
  const clang::CallExpr* pmap = nullptr;                 // the outermost pmap call
  std::vector<PmapLevelInfo> levels;                     // outer first
  const clang::Expr* fun = nullptr;                      // the innermost mapped function
  std::vector<const clang::CXXOperatorCallExpr*> calls;  // every call of the callable
  std::optional<Refusal> refusal;
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
clang::DynTypedNode spelled_parent(const clang::Stmt* node, clang::ASTContext& ctx) {
  clang::DynTypedNode current = clang::DynTypedNode::create(*node);
  while (true) {
    auto parents = ctx.getParents(current);
    if (parents.empty()) return clang::DynTypedNode();
    const auto* stmt = parents[0].get<clang::Stmt>();
    if (stmt == nullptr || !is_implicit(stmt)) return parents[0];
    current = parents[0];
  }
}

// `node` when it is a call of a callable object's operator() with `object` as the callable.
const clang::CXXOperatorCallExpr* call_of(const clang::DynTypedNode& node,
                                          const clang::Expr* object) {
  const auto* call = node.get<clang::CXXOperatorCallExpr>();
  if (call == nullptr || call->getOperator() != clang::OO_Call || call->getNumArgs() == 0) {
    return nullptr;
  }
  const clang::Expr* callee = call->getArg(0);
  while (callee != object && is_implicit(callee)) {
    callee = llvm::cast<clang::Expr>(*callee->child_begin());
  }
  return callee == object ? call : nullptr;
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

std::variant<CallShape, Refusal> call_shape(const clang::CXXOperatorCallExpr* call) {
  CallShape shape;
  for (unsigned i = 1; i < call->getNumArgs(); ++i) {
    clang::QualType type = call->getArg(i)->IgnoreImplicit()->getType();
    if (type->isDependentType()) {
      return Refusal{"pmap-template",
                     "this pmap callable is called with arguments whose types depend on a "
                     "template parameter, so the tool cannot tell mapped arrays from static "
                     "arguments; migrate it by hand (see docs/migration.md)"};
    }
    shape.arg_is_array.push_back(is_array(type));
  }
  clang::QualType result = call->getType();
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

// Every reference to `var` in its function, each of which must be a call of the callable.
std::variant<std::vector<const clang::CXXOperatorCallExpr*>, Refusal> calls_of_variable(
    const clang::VarDecl* var, clang::ASTContext& ctx) {
  Refusal escape{"pmap-escape",
                 "the pmap callable '" + var->getNameAsString() +
                     "' is used other than by calling it (passed on, copied into a member, "
                     "returned), so the tool cannot see all its calls; call it only directly, or "
                     "migrate it by hand to spmd::shard_map (see docs/migration.md)"};
  const auto* fn = llvm::dyn_cast_or_null<clang::FunctionDecl>(var->getParentFunctionOrMethod());
  if (!var->isLocalVarDecl() || fn == nullptr || fn->getBody() == nullptr) return escape;
  if (var->getTypeSourceInfo() == nullptr ||
      var->getTypeSourceInfo()->getType()->getContainedAutoType() == nullptr) {
    escape.message = "the pmap callable '" + var->getNameAsString() +
                     "' is declared with the explicit type '" + var->getType().getAsString() +
                     "', which the migrated code (a lambda) cannot keep; declare it 'auto'";
    return escape;
  }
  struct Finder : clang::RecursiveASTVisitor<Finder> {
    const clang::VarDecl* var;
    std::vector<const clang::DeclRefExpr*> refs;
    bool VisitDeclRefExpr(clang::DeclRefExpr* ref) {
      if (ref->getDecl() == var) refs.push_back(ref);
      return true;
    }
  } finder;
  finder.var = var;
  finder.TraverseStmt(fn->getBody());
  std::vector<const clang::CXXOperatorCallExpr*> calls;
  for (const clang::DeclRefExpr* ref : finder.refs) {
    const clang::CXXOperatorCallExpr* call = call_of(spelled_parent(ref, ctx), ref);
    if (call == nullptr) return escape;
    calls.push_back(call);
  }
  if (calls.empty()) {
    return Refusal{"pmap-escape", "the pmap callable '" + var->getNameAsString() +
                                      "' is never called, so its argument kinds are unknown; "
                                      "remove it or migrate it by hand"};
  }
  return calls;
}

// Where the pmap-ed callable `pmap` goes: called at once, or kept in a variable.
std::variant<std::vector<const clang::CXXOperatorCallExpr*>, Refusal> calls_of(
    const clang::CallExpr* pmap, clang::ASTContext& ctx) {
  clang::DynTypedNode parent = spelled_parent(pmap, ctx);
  if (const clang::CXXOperatorCallExpr* call = call_of(parent, pmap)) {
    return std::vector<const clang::CXXOperatorCallExpr*>{call};
  }
  if (const auto* var = parent.get<clang::VarDecl>()) return calls_of_variable(var, ctx);
  return Refusal{"pmap-escape",
                 "the pmap callable is passed on, returned or stored where the tool cannot see "
                 "its calls; keep it in a local 'auto' variable that is only called, or migrate "
                 "it by hand to spmd::shard_map (see docs/migration.md)"};
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

class SiteBuilder {
 public:
  SiteBuilder(Site& site, clang::ASTContext& ctx) : site_(site), ctx_(ctx) {}

  // The PmapSite for the generator, or why there is none.
  std::variant<PmapSite, Refusal> build() {
    std::variant<CallShape, Refusal> shape = call_shape(site_.calls[0]);
    if (auto* refusal = std::get_if<Refusal>(&shape)) return *refusal;
    shape_ = std::get<CallShape>(shape);
    for (const clang::CXXOperatorCallExpr* call : site_.calls) {
      std::variant<CallShape, Refusal> other = call_shape(call);
      if (auto* refusal = std::get_if<Refusal>(&other)) return *refusal;
      if (!(std::get<CallShape>(other) == shape_)) {
        return Refusal{"pmap-escape",
                       "this pmap callable is called with different argument kinds (Array or "
                       "not) or result types at different calls; migrate it by hand"};
      }
    }
    PmapSite out;
    out.fun = source(site_.fun);
    out.devices = site_.levels[0].devices;
    out.arg_is_array = shape_.arg_is_array;
    out.output_kind = shape_.output_kind;
    out.num_outputs = shape_.num_outputs;
    out.donate_argnums = site_.levels[0].donate_argnums;
    for (size_t l = 0; l < site_.levels.size(); ++l) {
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

  std::string source(const clang::Expr* e) const {
    clang::CharSourceRange range =
        clang::Lexer::makeFileCharRange(clang::CharSourceRange::getTokenRange(e->getSourceRange()),
                                        ctx_.getSourceManager(), ctx_.getLangOpts());
    return clang::Lexer::getSourceText(range, ctx_.getSourceManager(), ctx_.getLangOpts()).str();
  }

  std::variant<PmapSite::Level, Refusal> build_level(size_t l) {
    const PmapLevelInfo& info = site_.levels[l];
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
    return provably_replicated(mapped_body(site_.fun), output, outputs, varying, level.axis, ctx_);
  }

  Site& site_;
  clang::ASTContext& ctx_;
  CallShape shape_;
};

// The functions a call sits in, innermost first (lambda bodies included).
std::vector<const clang::FunctionDecl*> enclosing_functions(const clang::Stmt* s,
                                                            clang::ASTContext& ctx) {
  std::vector<const clang::FunctionDecl*> out;
  clang::DynTypedNode node = clang::DynTypedNode::create(*s);
  for (int depth = 0; depth < 512; ++depth) {
    auto parents = ctx.getParents(node);
    if (parents.empty()) break;
    node = parents[0];
    if (const auto* lambda = node.get<clang::LambdaExpr>())
      out.push_back(lambda->getCallOperator());
    if (const auto* fn = node.get<clang::FunctionDecl>()) out.push_back(fn);
  }
  return out;
}

const char* kTemplateMessage =
    "this pmap is inside a template, where its types depend on template parameters; migrate it "
    "by hand (see docs/migration.md)";

const char* kNestedMessage =
    "a pmap callable is called inside the function another pmap maps (imperfect nesting), which "
    "one shard_map cannot express; nest the calls directly, pmap(pmap(f, \"j\", ...), \"i\", ...), "
    "with any reshapes outside, and run the tool again";

// Reads the levels and finds the calls of one site; the refusal when they are out of reach.
std::optional<Refusal> analyse(Site& site, clang::ASTContext& ctx) {
  std::vector<const clang::CallExpr*> chain;
  for (const clang::CallExpr* level = site.pmap; level != nullptr;
       level = as_pmap_call(level->getArg(0))) {
    chain.push_back(level);
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
  for (const clang::FunctionDecl* fn : enclosing_functions(site.pmap, ctx)) {
    if (fn->isTemplated()) return Refusal{"pmap-template", kTemplateMessage};
  }
  for (const clang::CallExpr* level : chain) {
    std::variant<PmapLevelInfo, std::string> info = read_level(level, ctx);
    if (auto* reason = std::get_if<std::string>(&info)) return Refusal{"pmap-options", *reason};
    site.levels.push_back(std::get<PmapLevelInfo>(info));
  }
  for (size_t l = 1; l < site.levels.size(); ++l) {
    if (!site.levels[l].devices.empty() || !site.levels[l].donate_argnums.empty()) {
      return Refusal{"pmap-nested",
                     "an inner pmap of a nest gives devices or donate_argnums, which belong to "
                     "the outer pmap (the nest runs as one shard_map over one mesh); move them "
                     "to the outermost pmap"};
    }
  }
  const clang::CXXRecordDecl* fun_type = site.fun->getType()->getAsCXXRecordDecl();
  if (fun_type != nullptr && fun_type->getQualifiedNameAsString() == "spmd::Pmapped") {
    return Refusal{"pmap-nested",
                   "the mapped function is a pmap callable kept in a variable; write the nest "
                   "directly, pmap(pmap(f, \"j\", ...), \"i\", ...), and run the tool again"};
  }
  auto calls = calls_of(site.pmap, ctx);
  if (auto* refusal = std::get_if<Refusal>(&calls)) return *refusal;
  site.calls = std::get<0>(calls);
  return std::nullopt;
}

// The indentation of the line `loc` is on.
std::string indentation(const clang::SourceManager& sm, clang::SourceLocation loc) {
  llvm::StringRef buffer = sm.getBufferData(sm.getFileID(loc));
  size_t offset = sm.getFileOffset(loc);
  size_t start = buffer.rfind('\n', offset);
  start = start == llvm::StringRef::npos ? 0 : start + 1;
  size_t stop = start;
  while (stop < offset && (buffer[stop] == ' ' || buffer[stop] == '\t')) ++stop;
  return buffer.substr(start, stop - start).str();
}

// Replaces the site's pmap(...) expression; the refusal when some option rules it out.
std::optional<Refusal> rewrite(Site& site, clang::ASTContext& ctx, Sink& sink) {
  std::variant<PmapSite, Refusal> built = SiteBuilder(site, ctx).build();
  if (auto* refusal = std::get_if<Refusal>(&built)) return *refusal;
  const clang::SourceManager& sm = ctx.getSourceManager();
  clang::SourceLocation begin = site.pmap->getBeginLoc();
  EditBatch edits(sink, sm, ctx.getLangOpts());
  edits.replace(clang::CharSourceRange::getTokenRange(site.pmap->getSourceRange()),
                generate_shard_map(std::get<PmapSite>(built), indentation(sm, begin)));
  if (!edits.commit()) {
    return Refusal{"pmap-macro",
                   "part of this pmap is produced by a macro, so the tool cannot edit it; expand "
                   "the macro at this site, or migrate it by hand"};
  }
  sink.add_include(sm, begin, "spmd/spmd.h");
  sink.migrated(sm, begin, "pmap");
  return std::nullopt;
}

}  // namespace

void PmapRule::register_matchers(MatchFinder& finder) {
  finder.addMatcher(
      callExpr(callee(functionDecl(hasName("::spmd::pmap"))), unless(isExpansionInSystemHeader()),
               unless(isInTemplateInstantiation()))
          .bind("pmap"),
      this);
  finder.addMatcher(unresolvedLookupExpr(hasAnyDeclaration(namedDecl(hasName("::spmd::pmap"))),
                                         unless(isExpansionInSystemHeader()))
                        .bind("dependent"),
                    this);
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
  clang::ASTContext& ctx = *context_;
  const clang::SourceManager& sm = ctx.getSourceManager();
  std::set<const clang::CallExpr*> inner;
  for (const clang::CallExpr* call : calls_) {
    for (const clang::CallExpr* f = as_pmap_call(call->getArg(0)); f != nullptr;
         f = as_pmap_call(f->getArg(0))) {
      inner.insert(f);
    }
  }
  std::vector<Site> sites;
  std::map<const clang::FunctionDecl*, size_t> mapped;  // mapped function body -> site
  for (const clang::CallExpr* call : calls_) {
    if (inner.count(call) != 0) continue;
    Site& site = sites.emplace_back();
    site.pmap = call;
    site.refusal = analyse(site, ctx);
    const clang::FunctionDecl* body = site.fun == nullptr ? nullptr : mapped_body(site.fun);
    if (body != nullptr) mapped[body] = sites.size() - 1;
  }
  for (size_t s = 0; s < sites.size(); ++s) {
    for (const clang::CXXOperatorCallExpr* call : sites[s].calls) {
      for (const clang::FunctionDecl* fn : enclosing_functions(call, ctx)) {
        auto outer = mapped.find(fn);
        if (outer == mapped.end() || outer->second == s) continue;
        sites[s].refusal = sites[outer->second].refusal = Refusal{"pmap-nested", kNestedMessage};
      }
    }
  }
  for (Site& site : sites) {
    if (!site.refusal) site.refusal = rewrite(site, ctx, sink());
    if (site.refusal)
      sink().warn(sm, site.pmap->getBeginLoc(), site.refusal->rule, site.refusal->message);
  }
  calls_.clear();
}

}  // namespace spmd::migrate
