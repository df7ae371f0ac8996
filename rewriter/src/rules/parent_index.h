// SPDX-License-Identifier: Apache-2.0
// The parents of the user's AST nodes, for the rules' upward walks (what encloses a pmap, what
// uses its result). clang's ParentMapContext indexes the whole unit, template instantiations and
// system headers included: in a file with thousands of pmap sites that was a sixth of the tool's
// time, as every site instantiates spmd::pmap's templates. This index holds the same first parent
// clang would give, for nodes outside system headers and outside template instantiations (template
// patterns are indexed), so a node it does not hold is in an instantiation or a system header.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/AST/ASTTypeTraits.h>
#include <llvm/ADT/DenseMap.h>

#include <map>

namespace spmd::migrate {

class ParentIndex {
 public:
  // Indexes the unit of `ctx` (one traversal).
  explicit ParentIndex(clang::ASTContext& ctx);

  // The first parent of `node` in clang's traversal order, or an empty node (the unit, or a node
  // that is not indexed).
  clang::DynTypedNode parent(const clang::DynTypedNode& node) const;
  // True when `stmt` is in the user's code outside template instantiations.
  bool contains(const clang::Stmt* stmt) const { return pointer_parents_.count(stmt) != 0; }

 private:
  class Builder;

  llvm::DenseMap<const void*, clang::DynTypedNode> pointer_parents_;  // Decl and Stmt nodes
  std::map<clang::DynTypedNode, clang::DynTypedNode> other_parents_;  // TypeLoc and the like
};

}  // namespace spmd::migrate
