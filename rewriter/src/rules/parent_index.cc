// SPDX-License-Identifier: Apache-2.0
// The parent index of the user's code (parent_index.h).
#include "rules/parent_index.h"

#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/Basic/SourceManager.h>

#include <vector>

namespace spmd::migrate {

// Records each node's parent as the traversal enters it, the way clang's ParentMap visitor does
// (Decl, TypeLoc and NestedNameSpecifierLoc by Traverse*, statements by the data-recursion
// hooks), but leaves out template instantiations and declarations in system headers.
class ParentIndex::Builder : public clang::RecursiveASTVisitor<Builder> {
 public:
  Builder(ParentIndex& index, const clang::SourceManager& sm) : index_(index), sm_(sm) {}

  bool shouldVisitTemplateInstantiations() const { return false; }
  bool shouldVisitImplicitCode() const { return true; }

  bool TraverseDecl(clang::Decl* decl) {
    if (decl == nullptr) return true;
    if (!llvm::isa<clang::TranslationUnitDecl>(decl)) {
      clang::SourceLocation loc = decl->getLocation();
      if (loc.isValid() && sm_.isInSystemHeader(sm_.getExpansionLoc(loc))) return true;
    }
    add(index_.pointer_parents_, decl);
    stack_.push_back(clang::DynTypedNode::create(*decl));
    bool ok = RecursiveASTVisitor::TraverseDecl(decl);
    stack_.pop_back();
    return ok;
  }

  bool TraverseTypeLoc(clang::TypeLoc loc) {
    if (loc.isNull()) return true;
    clang::DynTypedNode node = clang::DynTypedNode::create(loc);
    add(index_.other_parents_, node);
    stack_.push_back(node);
    bool ok = RecursiveASTVisitor::TraverseTypeLoc(loc);
    stack_.pop_back();
    return ok;
  }

  bool TraverseNestedNameSpecifierLoc(clang::NestedNameSpecifierLoc loc) {
    if (!loc) return true;
    clang::DynTypedNode node = clang::DynTypedNode::create(loc);
    add(index_.other_parents_, node);
    stack_.push_back(node);
    bool ok = RecursiveASTVisitor::TraverseNestedNameSpecifierLoc(loc);
    stack_.pop_back();
    return ok;
  }

  bool dataTraverseStmtPre(clang::Stmt* stmt) {
    add(index_.pointer_parents_, stmt);
    stack_.push_back(clang::DynTypedNode::create(*stmt));
    return true;
  }

  bool dataTraverseStmtPost(clang::Stmt*) {
    stack_.pop_back();
    return true;
  }

 private:
  // The first parent wins, as getParents(...)[0] does.
  template <class Map, class Key>
  void add(Map& map, const Key& key) {
    if (stack_.empty()) return;
    map.try_emplace(key_of(key), stack_.back());
  }
  static const void* key_of(const clang::Decl* decl) { return decl; }
  static const void* key_of(const clang::Stmt* stmt) { return stmt; }
  static const clang::DynTypedNode& key_of(const clang::DynTypedNode& node) { return node; }

  ParentIndex& index_;
  const clang::SourceManager& sm_;
  std::vector<clang::DynTypedNode> stack_;
};

ParentIndex::ParentIndex(clang::ASTContext& ctx) {
  Builder(*this, ctx.getSourceManager()).TraverseAST(ctx);
}

clang::DynTypedNode ParentIndex::parent(const clang::DynTypedNode& node) const {
  if (const auto* decl = node.get<clang::Decl>()) {
    auto it = pointer_parents_.find(decl);
    return it == pointer_parents_.end() ? clang::DynTypedNode() : it->second;
  }
  if (const auto* stmt = node.get<clang::Stmt>()) {
    auto it = pointer_parents_.find(stmt);
    return it == pointer_parents_.end() ? clang::DynTypedNode() : it->second;
  }
  auto it = other_parents_.find(node);
  return it == other_parents_.end() ? clang::DynTypedNode() : it->second;
}

}  // namespace spmd::migrate
