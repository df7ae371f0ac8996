// SPDX-License-Identifier: Apache-2.0
// What one run of spmd-migrate produces: edits, includes to add, sites migrated and sites left
// for a human (clang-style warnings). Plain data, so that merging and output need no AST headers.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace spmd::migrate {

// Replace `length` bytes at `offset` of file `path` (canonical absolute path) with `text`.
struct Edit {
  std::string path;
  unsigned offset = 0;
  unsigned length = 0;
  std::string text;
  auto key() const { return std::tie(path, offset, length, text); }
  bool operator<(const Edit& o) const { return key() < o.key(); }
  bool operator==(const Edit& o) const { return key() == o.key(); }
};

// A place in a file, for diagnostics and reports (1-based line and column).
struct Location {
  std::string path;
  unsigned line = 0;
  unsigned column = 0;
  auto key() const { return std::tie(path, line, column); }
  bool operator<(const Location& o) const { return key() < o.key(); }
  bool operator==(const Location& o) const { return key() == o.key(); }
};

// A site a rule could not migrate faithfully: reported, never edited.
struct Warning {
  Location where;
  std::string rule;         // e.g. "pmap-macro"; printed as [spmd-migrate-<rule>]
  std::string message;      // the reason and the manual fix
  std::string source_line;  // the line of code, for the caret display
  auto key() const { return std::tie(where, rule, message); }
  bool operator<(const Warning& o) const { return key() < o.key(); }
};

// A site a rule migrated.
struct Migrated {
  Location where;
  std::string rule;
  auto key() const { return std::tie(where, rule); }
  bool operator<(const Migrated& o) const { return key() < o.key(); }
};

// A pmap callable that a function body runs (calls, or hands to code that may call it): a
// nested pmap when that function runs inside another pmap's body.
struct PmapRun {
  Location at;                   // where the body uses it
  std::optional<Location> site;  // the pmap(...) site that made it, when the tool can tell
  std::string what;              // how the body uses it, for messages: "calls 'inner'"
};

// What one function body (or one pmap's mapped function) may do, for the call graph of the whole
// run (nesting.h). Functions are named by key (their USR), the same in every translation unit.
struct BodyFacts {
  std::set<std::string> callees;  // user functions it may call (system and spmd code excluded)
  std::vector<PmapRun> runs;
  // Calls the tool cannot follow (function pointers, std::function): where, and what.
  std::vector<std::pair<Location, std::string>> indirect;
};

// A function of the run's call graph.
struct FunctionFacts {
  std::string name;  // for messages: "f", "Class::method", or "(lambda)"
  Location where;    // its definition; a declaration when `defined` is false
  bool defined = false;
  BodyFacts body;
  std::vector<std::string> overrides;  // keys of the virtual methods it overrides
};

// One pmap site as one translation unit sees it: its edits, or why it is left; its mapped
// function's facts; and the sites it can only be migrated with (one nest written through
// variables). Whether a site is finally migrated is decided for the whole run (nesting.h).
struct SiteOutcome {
  Warning report;  // where and source_line always; rule and message when refused
  bool refused = false;
  std::set<Edit> edits;
  // The edits when the site is a level of an imperfect nest (spmd::PmapNest), and why it cannot
  // be one ("" when it can).
  std::set<Edit> nest_edits;
  std::string nest_unfit;
  // Other rules' edits inside the code this site's edits copy (a pvary in the mapped lambda):
  // already applied to that copy, so they are dropped when the site is migrated.
  std::set<Edit> absorbed;
  std::set<std::pair<std::string, std::string>> includes;
  BodyFacts body;
  std::set<Location> nest;
};

// Everything found in one translation unit.
struct TuResult {
  std::string file;     // the TU's main file
  bool failed = false;  // compile errors: no edits are kept
  std::string errors;   // the compiler's diagnostics when failed
  std::set<Edit> edits;
  std::set<std::pair<std::string, std::string>> includes;  // (path, header to include)
  std::set<Warning> warnings;
  std::set<Migrated> migrated;
  std::map<Location, SiteOutcome> sites;           // pmap sites, by the pmap(...) location
  std::map<std::string, FunctionFacts> functions;  // by key
};

}  // namespace spmd::migrate
