// SPDX-License-Identifier: Apache-2.0
// Merging the results of every translation unit and producing spmd-migrate's outputs: new file
// contents (edits deduplicated across TUs, conflicts refused, includes inserted), unified diffs,
// clang-apply-replacements YAML, diagnostics and reports.
#pragma once

#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "migration.h"

namespace spmd::migrate {

// The new content of every file that changes, and the problems found while computing it.
struct Plan {
  std::map<std::string, std::string> original;  // path -> content before
  std::map<std::string, std::string> updated;   // path -> content after (changed files only)
  std::map<std::string, std::vector<Edit>> replacements;  // path -> final edits, for YAML
  std::vector<std::string> errors;                        // conflicts, unreadable files
  std::set<Warning> warnings;                             // every TU's, deduplicated
  std::set<Migrated> migrated;
  std::vector<const TuResult*> failed;
  size_t files_scanned = 0;
  bool written = false;             // write_in_place ran
  std::set<std::string> unwritten;  // updated files it could not write (left unchanged)
  std::set<std::string> unedited;   // files whose edits could not be applied (in errors)
};

Plan make_plan(const std::vector<TuResult>& results);

// Writes every updated file safely (file_io.h); a file that cannot be written is left unchanged,
// reported on `err` and recorded in plan.unwritten. Returns whether every file was written.
bool write_in_place(Plan& plan, std::ostream& err);
// A unified diff of every updated file, made in-process (unified_diff.h).
void write_diff(const Plan& plan, std::ostream& out);
// Writes clang-apply-replacements YAML to `path` (applying it gives the same bytes as
// write_in_place); false, with the reason on `err`, when the file cannot be written.
bool write_fixes_yaml(const Plan& plan, const std::string& path, std::ostream& err);
// Clang-style diagnostics for the sites left, and the TUs that failed.
void write_diagnostics(const Plan& plan, std::ostream& err);
// The summary table: files, sites migrated and left, per rule.
void write_summary(const Plan& plan, std::ostream& out);
// A report file: Markdown or JSON by the extension of `path`.
bool write_report(const Plan& plan, const std::string& path, std::ostream& err);

}  // namespace spmd::migrate
