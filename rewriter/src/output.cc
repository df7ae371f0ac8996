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

// `replacements` with their line ends written "\r\n", for a file that uses them: the generated
// code (and the inserted includes) must not mix line ends into it.
clang::tooling::Replacements with_crlf(const clang::tooling::Replacements& replacements) {
  clang::tooling::Replacements out;
  for (const clang::tooling::Replacement& r : replacements) {
    std::string text;
    for (char c : r.getReplacementText()) {
      if (c == '\n' && (text.empty() || text.back() != '\r')) text += '\r';
      text += c;
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
  // An offset of UINT_MAX asks cleanupAroundReplacements to insert a header in the right include
  // block, and to skip it when the file already includes it.
  for (const std::string& header : headers) {
    llvm::consumeError(replacements.add(
        clang::tooling::Replacement(path, UINT_MAX, 0, "#include <" + header + ">")));
  }
  // The project's .clang-format, if any: it places the includes, and the edited lines are
  // formatted with it. Without one, the edits are kept as generated.
  llvm::Expected<clang::format::FormatStyle> style = clang::format::getStyle("file", path, "none");
  if (!style) {
    llvm::consumeError(style.takeError());
    style = clang::format::getNoStyle();
  }
  llvm::Expected<clang::tooling::Replacements> cleaned =
      clang::format::cleanupAroundReplacements(code, replacements, *style);
  if (cleaned && !style->DisableFormat) {
    cleaned = clang::format::formatReplacements(code, *cleaned, *style);
  }
  if (!cleaned) {
    plan.errors.push_back(path + ": " + llvm::toString(cleaned.takeError()));
    return;
  }
  if (code.find("\r\n") != std::string::npos) cleaned = with_crlf(*cleaned);
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

std::string location_string(const Location& where) {
  return where.path + ":" + std::to_string(where.line) + ":" + std::to_string(where.column);
}

}  // namespace

Plan make_plan(const std::vector<TuResult>& results) {
  Plan plan;
  std::map<std::string, std::vector<Edit>> edits;
  std::map<std::string, std::set<std::string>> headers;
  std::set<Edit> seen;
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
  for (auto& [path, file_edits] : edits)
    plan_file(path, std::move(file_edits), headers[path], plan);
  return plan;
}

bool write_in_place(const Plan& plan, std::ostream& err) {
  bool ok = true;
  for (const auto& [path, content] : plan.updated) {
    std::string tmp = path + ".spmd-migrate.tmp";
    {
      std::ofstream out(tmp, std::ios::binary);
      out << content;
      ok = ok && out.good();
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      err << "spmd-migrate: cannot write " << path << "\n";
      ok = false;
    }
  }
  return ok;
}

void write_diff(const Plan& plan, std::ostream& out) {
  for (const auto& [path, content] : plan.updated) {
    llvm::SmallString<128> before, after;
    llvm::sys::fs::createTemporaryFile("spmd-migrate-a", "txt", before);
    llvm::sys::fs::createTemporaryFile("spmd-migrate-b", "txt", after);
    std::ofstream(before.c_str(), std::ios::binary) << plan.original.at(path);
    std::ofstream(after.c_str(), std::ios::binary) << content;
    std::string cmd = "diff -u --label 'a" + path + "' --label 'b" + path + "' '" +
                      before.str().str() + "' '" + after.str().str() + "'";
    std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
    char buffer[4096];
    size_t n;
    while (pipe && (n = fread(buffer, 1, sizeof(buffer), pipe.get())) > 0) out.write(buffer, n);
    llvm::sys::fs::remove(before);
    llvm::sys::fs::remove(after);
  }
}

void write_fixes_yaml(const Plan& plan, std::ostream& out) {
  clang::tooling::TranslationUnitReplacements tur;
  tur.MainSourceFile = "";
  for (const auto& [path, edits] : plan.replacements) {
    for (const Edit& e : edits) {
      tur.Replacements.emplace_back(e.path, e.offset, e.length, e.text);
    }
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::yaml::Output yaml(os);
  yaml << tur;
  os.flush();
  out << text;
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
  for (const Migrated& m : plan.migrated) ++per_rule[m.rule].first;
  for (const Warning& w : plan.warnings) ++per_rule[w.rule].second;
  out << "spmd-migrate: " << plan.files_scanned << " files scanned, " << plan.updated.size()
      << " changed, " << plan.migrated.size() << " sites migrated, " << plan.warnings.size()
      << " left for a human, " << plan.failed.size() << " failed to compile, " << plan.errors.size()
      << " errors\n";
  if (per_rule.empty()) return;
  out << "| rule | migrated | left |\n|---|---|---|\n";
  for (const auto& [rule, counts] : per_rule) {
    out << "| " << rule << " | " << counts.first << " | " << counts.second << " |\n";
  }
}

bool write_report(const Plan& plan, const std::string& path, std::ostream& err) {
  std::ofstream out(path);
  if (!out) {
    err << "spmd-migrate: cannot write the report " << path << "\n";
    return false;
  }
  if (llvm::StringRef(path).endswith(".json")) {
    llvm::json::Array migrated, left, failed;
    for (const Migrated& m : plan.migrated) {
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
    llvm::json::Object report{{"files_scanned", static_cast<int64_t>(plan.files_scanned)},
                              {"files_changed", static_cast<int64_t>(plan.updated.size())},
                              {"migrated", std::move(migrated)},
                              {"left", std::move(left)},
                              {"failed", std::move(failed)}};
    std::string text;
    llvm::raw_string_ostream os(text);
    os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report))) << "\n";
    os.flush();
    out << text;
    return true;
  }
  out << "# spmd-migrate report\n\n";
  write_summary(plan, out);
  out << "\n## Sites left for a human\n\n| location | rule | reason |\n|---|---|---|\n";
  for (const Warning& w : plan.warnings) {
    out << "| " << location_string(w.where) << " | " << w.rule << " | " << w.message << " |\n";
  }
  out << "\n## Sites migrated\n\n| location | rule |\n|---|---|\n";
  for (const Migrated& m : plan.migrated) {
    out << "| " << location_string(m.where) << " | " << m.rule << " |\n";
  }
  return true;
}

}  // namespace spmd::migrate
