// SPDX-License-Identifier: Apache-2.0
// Unit tests of the rules' parent index: for every node of the user's code it gives the first
// parent clang's ParentMapContext gives, and it holds no node of a template instantiation.
#include "rules/parent_index.h"

#include <clang/AST/ParentMapContext.h>
#include <clang/AST/RecursiveASTVisitor.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/ASTMatchers/ASTMatchers.h>
#include <clang/Tooling/Tooling.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace spmd::migrate {
namespace {

// Lambdas (generic ones too), templates and their instantiations, an explicit specialization,
// unevaluated operands, constructor initializers, nested namespaces and a local class.
const char* kCode = R"cc(
  namespace outer::inner {
  int twice(int x) { return 2 * x; }
  template <class T>
  T apply(T v) {
    return static_cast<T>(twice(static_cast<int>(v)) + sizeof(T));
  }
  template <>
  char apply<char>(char v) {
    return v;
  }
  template <class T>
  struct Box {
    T value;
    explicit Box(T v) : value(apply(v)) {}
    T get() const {
      return [this] { return apply(value); }();
    }
  };
  }  // namespace outer::inner
  using outer::inner::apply;
  struct Holder {
    decltype(apply(1)) member = 0;
  };
  int use(int n) {
    auto generic = [](auto a) { return apply(a) + 1; };
    struct Local {
      int twice_of(int k) { return outer::inner::twice(k); }
    };
    outer::inner::Box<long> box(n);
    int total = generic(n) + static_cast<int>(box.get()) + Local().twice_of(n);
    for (int i = 0; i < n; ++i) total += sizeof(apply(i)) > 2 ? i : -i;
    return total + apply('c');
  }
)cc";

// Every Decl and Stmt of the code outside template instantiations.
struct Collector : clang::RecursiveASTVisitor<Collector> {
  bool shouldVisitImplicitCode() const { return true; }
  bool VisitDecl(clang::Decl* d) {
    if (!llvm::isa<clang::TranslationUnitDecl>(d)) nodes.push_back(clang::DynTypedNode::create(*d));
    return true;
  }
  bool VisitStmt(clang::Stmt* s) {
    nodes.push_back(clang::DynTypedNode::create(*s));
    return true;
  }
  std::vector<clang::DynTypedNode> nodes;
};

class ParentIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unit_ = clang::tooling::buildASTFromCodeWithArgs(kCode, {"-std=c++20"});
    ASSERT_NE(unit_, nullptr);
    ASSERT_FALSE(unit_->getDiagnostics().hasErrorOccurred());
  }
  clang::ASTContext& ctx() { return unit_->getASTContext(); }
  std::unique_ptr<clang::ASTUnit> unit_;
};

TEST_F(ParentIndexTest, GivesClangsFirstParentForEveryNodeOfTheUsersCode) {
  ParentIndex index(ctx());
  Collector collector;
  collector.TraverseAST(ctx());
  ASSERT_GT(collector.nodes.size(), 150u);
  for (const clang::DynTypedNode& node : collector.nodes) {
    auto expected = ctx().getParents(node);
    ASSERT_FALSE(expected.empty());
    clang::DynTypedNode got = index.parent(node);
    EXPECT_EQ(got, expected[0]) << "node " << node.getNodeKind().asStringRef().str() << " got "
                                << got.getNodeKind().asStringRef().str() << " expected "
                                << expected[0].getNodeKind().asStringRef().str();
  }
}

TEST_F(ParentIndexTest, WalksUpThroughTypeLocsOfUnevaluatedOperands) {
  using namespace clang::ast_matchers;
  ParentIndex index(ctx());
  auto found = match(callExpr(hasAncestor(fieldDecl(hasName("member")))).bind("e"), ctx());
  ASSERT_EQ(found.size(), 1u);
  clang::DynTypedNode node = clang::DynTypedNode::create(*found[0].getNodeAs<clang::Expr>("e"));
  int type_locs = 0;
  while (!node.getNodeKind().isNone() && node.get<clang::FieldDecl>() == nullptr) {
    if (node.get<clang::TypeLoc>() != nullptr) ++type_locs;
    node = index.parent(node);
  }
  EXPECT_GT(type_locs, 0);
  ASSERT_NE(node.get<clang::FieldDecl>(), nullptr);
}

TEST_F(ParentIndexTest, HoldsNoNodeOfATemplateInstantiation) {
  using namespace clang::ast_matchers;
  ParentIndex index(ctx());
  auto instantiated = match(callExpr(isInTemplateInstantiation()).bind("c"), ctx());
  auto written = match(callExpr(unless(isInTemplateInstantiation())).bind("c"), ctx());
  ASSERT_FALSE(instantiated.empty());
  ASSERT_FALSE(written.empty());
  for (const clang::ast_matchers::BoundNodes& b : instantiated) {
    EXPECT_FALSE(index.contains(b.getNodeAs<clang::CallExpr>("c")));
  }
  for (const clang::ast_matchers::BoundNodes& b : written) {
    EXPECT_TRUE(index.contains(b.getNodeAs<clang::CallExpr>("c")));
  }
}

}  // namespace
}  // namespace spmd::migrate
