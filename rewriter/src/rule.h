// SPDX-License-Identifier: Apache-2.0
// A migration rule, clang-tidy style: one rule is one header, one source, one test fixture.
//
// A rule registers AST matchers for the legacy constructs it knows and, for each match, either
// records minimal edits (keeping the user's spelling around them) or, when it cannot migrate the
// site faithfully, a warning with the reason and the manual fix. Rules never edit code inside a
// macro body; they report it.
#pragma once

#include <clang/AST/ASTContext.h>
#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/Basic/SourceManager.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "migration.h"

namespace spmd::migrate {

// Where rules put their results for one translation unit.
class Sink {
 public:
  explicit Sink(TuResult& result) : result_(result) {}

  // The edit replacing `range` with `text`. A range inside macro arguments maps to where the
  // argument is written; nullopt when the range has no single file range (for example inside a
  // macro body).
  static std::optional<Edit> edit(const clang::SourceManager& sm, const clang::LangOptions& lang,
                                  clang::CharSourceRange range, const std::string& text);
  void record(const Edit& edit) { result_.edits.insert(edit); }
  // The source text of `range` with the edits recorded so far inside it applied, each added to
  // `applied`: code that a rule copies into its own edit (the pmap rule copies the mapped
  // function) keeps the other rules' edits of it. Nullopt when the range has no single file range.
  std::optional<std::string> edited_text(const clang::SourceManager& sm,
                                         const clang::LangOptions& lang,
                                         clang::CharSourceRange range,
                                         std::set<Edit>& applied) const;
  // Adds `#include <header>` to the file that contains `in_file`, unless present.
  void add_include(const clang::SourceManager& sm, clang::SourceLocation in_file,
                   const std::string& header);
  void migrated(const clang::SourceManager& sm, clang::SourceLocation at, const std::string& rule);
  void warn(const clang::SourceManager& sm, clang::SourceLocation at, const std::string& rule,
            const std::string& message);
  // The outcome of the pmap site at `at`, created empty (where and source line filled).
  SiteOutcome& site(const clang::SourceManager& sm, clang::SourceLocation at);
  // The call graph facts of this translation unit's functions, by key.
  std::map<std::string, FunctionFacts>& functions() { return result_.functions; }

 private:
  TuResult& result_;
};

// Edits of one site, recorded all together or not at all.
class EditBatch {
 public:
  EditBatch(Sink& sink, const clang::SourceManager& sm, const clang::LangOptions& lang)
      : sink_(sink), sm_(sm), lang_(lang) {}
  EditBatch& replace(clang::CharSourceRange range, const std::string& text);
  EditBatch& insert(clang::SourceLocation at, const std::string& text);
  // Records every edit when all of them map to file ranges; returns whether it did.
  bool commit();
  // Adds every edit to `out` (instead of recording it) when all of them map to file ranges;
  // returns whether it did.
  bool commit_to(std::set<Edit>& out) const;

 private:
  Sink& sink_;
  const clang::SourceManager& sm_;
  const clang::LangOptions& lang_;
  std::vector<Edit> edits_;
  bool ok_ = true;
};

class Rule : public clang::ast_matchers::MatchFinder::MatchCallback {
 public:
  Rule(std::string name, Sink& sink) : name_(std::move(name)), sink_(sink) {}
  const std::string& name() const { return name_; }
  virtual void register_matchers(clang::ast_matchers::MatchFinder& finder) = 0;

 protected:
  Sink& sink() { return sink_; }
  // The source text of a node's range, as written.
  static std::string text_of(const clang::SourceManager& sm, const clang::LangOptions& lang,
                             clang::SourceRange range);
  // True when the range comes from a macro body (not a macro argument).
  static bool in_macro_body(const clang::SourceManager& sm, clang::SourceRange range);

 private:
  std::string name_;
  Sink& sink_;
};

// The place `at` is written (its file location: a macro argument's spelling, a macro body's
// expansion), with the file's canonical absolute path.
Location location_of(const clang::SourceManager& sm, clang::SourceLocation at);
// The line of source `at` is written on, without its line end.
std::string source_line(const clang::SourceManager& sm, clang::SourceLocation at);

// Every rule, in the order they run (rules/registry.cc).
std::vector<std::unique_ptr<Rule>> make_rules(Sink& sink);

}  // namespace spmd::migrate
