// SPDX-License-Identifier: Apache-2.0
// Merging, applying and reporting (output.h).
#include "output.h"

#include <clang/Format/Format.h>
#include <clang/Tooling/Core/Replacement.h>
#include <clang/Tooling/ReplacementsYaml.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/JSON.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/YAMLTraits.h>
#include <llvm/Support/raw_ostream.h>

#include <climits>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "file_io.h"
#include "formatting.h"
#include "nesting.h"
#include "unified_diff.h"

namespace spmd::migrate {
namespace {

bool read_file(const std::string& path, std::string& content) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  content = ss.str();
  return true;
}

// Two edits at overlapping places that are not the same edit: the file would be ambiguous.
std::string find_conflict(const std::vector<Edit>& edits) {
  for (size_t k = 1; k < edits.size(); ++k) {
    const Edit& a = edits[k - 1];
    const Edit& b = edits[k];
    bool overlap = a.offset + a.length > b.offset ||
                   (a.offset == b.offset && a.length == 0 && b.length == 0 && a.text != b.text);
    if (overlap) {
      return "conflicting edits at offset " + std::to_string(b.offset) + ": '" + a.text +
             "' and '" + b.text + "'";
    }
  }
  return "";
}

// `replacements` with the generated line ends ("\n") written as `end`, so that the generated code
// (and the inserted includes) follow the file's own line ends.
clang::tooling::Replacements with_line_end(const clang::tooling::Replacements& replacements,
                                           LineEnd end) {
  if (end == LineEnd::kLf) return replacements;
  clang::tooling::Replacements out;
  for (const clang::tooling::Replacement& r : replacements) {
    std::string text;
    for (char c : r.getReplacementText()) {
      if (c != '\n') {
        text += c;
      } else if (end == LineEnd::kCr) {
        if (!text.empty() && text.back() == '\r') continue;  // "\r\n" from clang-format: one CR
        text += '\r';
      } else {
        if (text.empty() || text.back() != '\r') text += '\r';
        text += c;
      }
    }
    llvm::consumeError(
        out.add(clang::tooling::Replacement(r.getFilePath(), r.getOffset(), r.getLength(), text)));
  }
  return out;
}

// Applies one file's edits and includes; fills plan.updated / plan.replacements or an error.
void plan_file(const std::string& path, std::vector<Edit> edits,
               const std::set<std::string>& headers, Plan& plan) {
  std::string code;
  if (!read_file(path, code)) {
    plan.errors.push_back(path + ": cannot read the file to edit");
    return;
  }
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) {
    return std::tie(a.offset, a.length, a.text) < std::tie(b.offset, b.length, b.text);
  });
  if (std::string conflict = find_conflict(edits); !conflict.empty()) {
    plan.errors.push_back(path + ": " + conflict + "; the file is left unchanged");
    return;
  }
  clang::tooling::Replacements replacements;
  for (const Edit& e : edits) {
    if (llvm::Error err =
            replacements.add(clang::tooling::Replacement(path, e.offset, e.length, e.text))) {
      plan.errors.push_back(path + ": " + llvm::toString(std::move(err)));
      return;
    }
  }
  // The project's .clang-format, if any: it places the includes, and the edited lines are
  // formatted with it. Without one, the edits are kept as generated. Line ends are the file's.
  llvm::Expected<clang::format::FormatStyle> style = clang::format::getStyle("file", path, "none");
  if (!style) {
    llvm::consumeError(style.takeError());
    style = clang::format::getNoStyle();
  }
  LineEnd end = dominant_line_end(code);
  style->DeriveLineEnding = false;
  style->UseCRLF = end == LineEnd::kCrLf;
  // clang-format reads a lone "\r" as no line end: it sees a CR-only file with "\n" instead (the
  // same offsets).
  std::string seen = code;
  if (end == LineEnd::kCr) {
    for (size_t i = 0; i < seen.size(); ++i) {
      if (seen[i] == '\r' && (i + 1 == seen.size() || seen[i + 1] != '\n')) seen[i] = '\n';
    }
  }
  // An offset of UINT_MAX asks cleanupAroundReplacements to insert a header in the right include
  // block, and to skip it when the file already includes it.
  clang::tooling::Replacements includes;
  for (const std::string& header : headers) {
    llvm::consumeError(
        includes.add(clang::tooling::Replacement(path, UINT_MAX, 0, "#include <" + header + ">")));
  }
  llvm::Expected<clang::tooling::Replacements> placed =
      clang::format::cleanupAroundReplacements(seen, includes, *style);
  if (!placed) {
    plan.errors.push_back(path + ": " + llvm::toString(placed.takeError()));
    return;
  }
  for (const clang::tooling::Replacement& r : *placed) {
    if (llvm::Error err = replacements.add(r)) {
      plan.errors.push_back(path + ": " + llvm::toString(std::move(err)));
      return;
    }
  }
  llvm::Expected<clang::tooling::Replacements> cleaned = format_edits(seen, replacements, *style);
  if (!cleaned) {
    plan.errors.push_back(path + ": " + llvm::toString(cleaned.takeError()));
    return;
  }
  cleaned = with_line_end(*cleaned, end);
  llvm::Expected<std::string> result = clang::tooling::applyAllReplacements(code, *cleaned);
  if (!result) {
    plan.errors.push_back(path + ": " + llvm::toString(result.takeError()));
    return;
  }
  plan.original[path] = code;
  if (*result == code) return;
  plan.updated[path] = *result;
  for (const clang::tooling::Replacement& r : *cleaned) {
    plan.replacements[path].push_back(
        Edit{path, r.getOffset(), r.getLength(), r.getReplacementText().str()});
  }
}

// A site counts as migrated only when its file was (or, without -i, would be) written.
bool counted(const Plan& plan, const Migrated& m) {
  return plan.unwritten.count(m.where.path) == 0 && plan.unedited.count(m.where.path) == 0;
}

std::string location_string(const Location& where) {
  return where.path + ":" + std::to_string(where.line) + ":" + std::to_string(where.column);
}

}  // namespace

Plan make_plan(const std::vector<TuResult>& results) {
  Plan plan;
  std::map<std::string, std::vector<Edit>> edits;
  std::map<std::string, std::set<std::string>> headers;
  const std::map<Location, SiteOutcome> sites = decide_sites(results);
  // Edits that a migrated site's code already contains are not applied again.
  std::set<Edit> seen;
  for (const auto& [where, site] : sites) {
    if (!site.refused) seen.insert(site.absorbed.begin(), site.absorbed.end());
  }
  for (const TuResult& r : results) {
    ++plan.files_scanned;
    if (r.failed) {
      plan.failed.push_back(&r);
      continue;
    }
    for (const Edit& e : r.edits) {
      if (seen.insert(e).second) edits[e.path].push_back(e);
    }
    for (const auto& [path, header] : r.includes) headers[path].insert(header);
    plan.warnings.insert(r.warnings.begin(), r.warnings.end());
    plan.migrated.insert(r.migrated.begin(), r.migrated.end());
  }
  for (const auto& [where, site] : sites) {
    if (site.refused) {
      plan.warnings.insert(site.report);
      continue;
    }
    for (const Edit& e : site.edits) {
      if (seen.insert(e).second) edits[e.path].push_back(e);
    }
    for (const auto& [path, header] : site.includes) headers[path].insert(header);
    plan.migrated.insert(Migrated{where, "pmap"});
  }
  for (auto& [path, file_edits] : edits) {
    const size_t errors = plan.errors.size();
    plan_file(path, std::move(file_edits), headers[path], plan);
    if (plan.errors.size() != errors) plan.unedited.insert(path);
  }
  return plan;
}

bool write_in_place(Plan& plan, std::ostream& err) {
  plan.written = true;
  for (const auto& [path, content] : plan.updated) {
    std::string error = replace_file(path, plan.original.at(path), content);
    if (error.empty()) continue;
    err << "spmd-migrate: error: " << error << "\n";
    plan.unwritten.insert(path);
  }
  return plan.unwritten.empty();
}

void write_diff(const Plan& plan, std::ostream& out) {
  for (const auto& [path, content] : plan.updated) {
    out << unified_diff(path, plan.original.at(path), plan.replacements.at(path));
  }
}

bool write_fixes_yaml(const Plan& plan, const std::string& path, std::ostream& err) {
  clang::tooling::TranslationUnitReplacements tur;
  tur.MainSourceFile = "";
  for (const auto& [file, edits] : plan.replacements) {
    for (const Edit& e : edits) {
      tur.Replacements.emplace_back(e.path, e.offset, e.length, e.text);
    }
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::yaml::Output yaml(os);
  yaml << tur;
  os.flush();
  std::string error = write_file(path, text);
  if (!error.empty()) err << "spmd-migrate: error: --export-fixes: " << error << "\n";
  return error.empty();
}

void write_diagnostics(const Plan& plan, std::ostream& err) {
  for (const Warning& w : plan.warnings) {
    err << location_string(w.where) << ": warning: " << w.message << " [spmd-migrate-" << w.rule
        << "]\n";
    if (!w.source_line.empty()) {
      err << w.source_line << "\n";
      std::string caret;
      for (unsigned c = 1; c < w.where.column && c <= w.source_line.size(); ++c) {
        caret += w.source_line[c - 1] == '\t' ? '\t' : ' ';
      }
      err << caret << "^\n";
    }
  }
  for (const TuResult* r : plan.failed) {
    err << r->file << ": error: the file does not compile, so none of its sites were migrated:\n"
        << r->errors;
  }
  for (const std::string& e : plan.errors) err << "error: " << e << "\n";
}

void write_summary(const Plan& plan, std::ostream& out) {
  std::map<std::string, std::pair<size_t, size_t>> per_rule;
  size_t migrated = 0;
  for (const Migrated& m : plan.migrated) {
    if (!counted(plan, m)) continue;
    ++per_rule[m.rule].first;
    ++migrated;
  }
  for (const Warning& w : plan.warnings) ++per_rule[w.rule].second;
  out << "spmd-migrate: " << plan.files_scanned << " files scanned, "
      << plan.updated.size() - plan.unwritten.size()
      << (plan.written ? " changed, " : " to change, ") << migrated << " sites migrated, "
      << plan.warnings.size() << " left for a human, " << plan.failed.size()
      << " failed to compile, " << plan.errors.size() + plan.unwritten.size() << " errors\n";
  if (per_rule.empty()) return;
  out << "| rule | migrated | left |\n|---|---|---|\n";
  for (const auto& [rule, counts] : per_rule) {
    out << "| " << rule << " | " << counts.first << " | " << counts.second << " |\n";
  }
}

bool write_report(const Plan& plan, const std::string& path, std::ostream& err) {
  std::string text;
  llvm::raw_string_ostream out(text);
  if (llvm::StringRef(path).endswith(".json")) {
    llvm::json::Array migrated, left, failed;
    for (const Migrated& m : plan.migrated) {
      if (!counted(plan, m)) continue;
      migrated.push_back(llvm::json::Object{{"file", m.where.path},
                                            {"line", m.where.line},
                                            {"column", m.where.column},
                                            {"rule", m.rule}});
    }
    for (const Warning& w : plan.warnings) {
      left.push_back(llvm::json::Object{{"file", w.where.path},
                                        {"line", w.where.line},
                                        {"column", w.where.column},
                                        {"rule", w.rule},
                                        {"reason", w.message}});
    }
    for (const TuResult* r : plan.failed) failed.push_back(r->file);
    llvm::json::Array unwritten;
    for (const std::string& file : plan.unwritten) unwritten.push_back(file);
    llvm::json::Object report{
        {"files_scanned", static_cast<int64_t>(plan.files_scanned)},
        {"files_changed", static_cast<int64_t>(plan.updated.size() - plan.unwritten.size())},
        {"migrated", std::move(migrated)},
        {"left", std::move(left)},
        {"failed", std::move(failed)},
        {"unwritten", std::move(unwritten)}};
    out << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
  } else {
    std::ostringstream summary;
    write_summary(plan, summary);
    out << "# spmd-migrate report\n\n" << summary.str();
    out << "\n## Sites left for a human\n\n| location | rule | reason |\n|---|---|---|\n";
    for (const Warning& w : plan.warnings) {
      out << "| " << location_string(w.where) << " | " << w.rule << " | " << w.message << " |\n";
    }
    out << "\n## Sites migrated\n\n| location | rule |\n|---|---|\n";
    for (const Migrated& m : plan.migrated) {
      if (!counted(plan, m)) continue;
      out << "| " << location_string(m.where) << " | " << m.rule << " |\n";
    }
  }
  out.flush();
  std::string error = write_file(path, text);
  if (!error.empty()) err << "spmd-migrate: error: --report: " << error << "\n";
  return error.empty();
}

}  // namespace spmd::migrate
