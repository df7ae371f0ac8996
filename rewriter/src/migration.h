// What one run of spmd-migrate produces: edits, includes to add, sites migrated and sites left
// for a human (clang-style warnings). Plain data, so that merging and output need no AST headers.
#pragma once

#include <cstdint>
#include <map>
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

// Everything found in one translation unit.
struct TuResult {
  std::string file;     // the TU's main file
  bool failed = false;  // compile errors: no edits are kept
  std::string errors;   // the compiler's diagnostics when failed
  std::set<Edit> edits;
  std::set<std::pair<std::string, std::string>> includes;  // (path, header to include)
  std::set<Warning> warnings;
  std::set<Migrated> migrated;
};

}  // namespace spmd::migrate
