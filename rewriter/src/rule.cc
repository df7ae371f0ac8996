// SPDX-License-Identifier: Apache-2.0
// Sink and Rule helpers (rule.h): turning clang locations into canonical file edits and
// diagnostics.
#include "rule.h"

#include <clang/Lex/Lexer.h>
#include <llvm/Support/FileSystem.h>

namespace spmd::migrate {
namespace {

// The canonical absolute path of the file holding `loc` (a file location), so that one header
// reached through different spellings or symlinks gets one set of edits.
std::string canonical_path(const clang::SourceManager& sm, clang::SourceLocation loc) {
  clang::FileID fid = sm.getFileID(loc);
  if (const clang::FileEntry* entry = sm.getFileEntryForID(fid)) {
    llvm::StringRef real = entry->tryGetRealPathName();
    if (!real.empty()) return real.str();
  }
  llvm::SmallString<256> path;
  if (llvm::sys::fs::real_path(sm.getFilename(loc), path)) return sm.getFilename(loc).str();
  return std::string(path.str());
}

}  // namespace

Location location_of(const clang::SourceManager& sm, clang::SourceLocation at) {
  clang::SourceLocation file_loc = sm.getFileLoc(at);
  return Location{canonical_path(sm, file_loc), sm.getSpellingLineNumber(file_loc),
                  sm.getSpellingColumnNumber(file_loc)};
}

std::string source_line(const clang::SourceManager& sm, clang::SourceLocation at) {
  clang::SourceLocation file_loc = sm.getFileLoc(at);
  bool invalid = false;
  llvm::StringRef buffer = sm.getBufferData(sm.getFileID(file_loc), &invalid);
  if (invalid) return "";
  size_t offset = sm.getFileOffset(file_loc);
  size_t start = buffer.find_last_of("\r\n", offset == 0 ? 0 : offset - 1);
  start = start == llvm::StringRef::npos || offset == 0 ? 0 : start + 1;
  size_t stop = buffer.find_first_of("\r\n", offset);
  return buffer.substr(start, stop == llvm::StringRef::npos ? llvm::StringRef::npos : stop - start)
      .str();
}

std::optional<Edit> Sink::edit(const clang::SourceManager& sm, const clang::LangOptions& lang,
                               clang::CharSourceRange range, const std::string& text) {
  clang::CharSourceRange file_range = clang::Lexer::makeFileCharRange(range, sm, lang);
  if (file_range.isInvalid()) return std::nullopt;
  clang::SourceLocation begin = file_range.getBegin();
  unsigned start = sm.getFileOffset(begin);
  unsigned stop = sm.getFileOffset(file_range.getEnd());
  return Edit{canonical_path(sm, begin), start, stop - start, text};
}

std::optional<std::string> Sink::edited_text(const clang::SourceManager& sm,
                                             const clang::LangOptions& lang,
                                             clang::CharSourceRange range,
                                             std::set<Edit>& applied) const {
  clang::CharSourceRange file_range = clang::Lexer::makeFileCharRange(range, sm, lang);
  if (file_range.isInvalid()) return std::nullopt;
  const std::string path = canonical_path(sm, file_range.getBegin());
  const unsigned start = sm.getFileOffset(file_range.getBegin());
  const unsigned stop = sm.getFileOffset(file_range.getEnd());
  llvm::StringRef buffer = sm.getBufferData(sm.getFileID(file_range.getBegin()));
  std::string text;
  unsigned copied = start;  // the end of the source copied so far
  // result_.edits is ordered by offset; an edit that overlaps the one before is left out (and
  // reported as a conflict when the file is planned).
  for (const Edit& e : result_.edits) {
    if (e.path != path || e.offset < copied || e.offset + e.length > stop) continue;
    text += buffer.substr(copied, e.offset - copied).str() + e.text;
    copied = e.offset + e.length;
    applied.insert(e);
  }
  return text + buffer.substr(copied, stop - copied).str();
}

EditBatch& EditBatch::replace(clang::CharSourceRange range, const std::string& text) {
  std::optional<Edit> e = Sink::edit(sm_, lang_, range, text);
  ok_ = ok_ && e.has_value();
  if (e) edits_.push_back(*e);
  return *this;
}

EditBatch& EditBatch::insert(clang::SourceLocation at, const std::string& text) {
  return replace(clang::CharSourceRange::getCharRange(at, at), text);
}

bool EditBatch::commit() {
  if (!ok_) return false;
  for (const Edit& e : edits_) sink_.record(e);
  return true;
}

bool EditBatch::commit_to(std::set<Edit>& out) const {
  if (!ok_) return false;
  out.insert(edits_.begin(), edits_.end());
  return true;
}

void Sink::add_include(const clang::SourceManager& sm, clang::SourceLocation in_file,
                       const std::string& header) {
  result_.includes.emplace(canonical_path(sm, sm.getFileLoc(in_file)), header);
}

void Sink::migrated(const clang::SourceManager& sm, clang::SourceLocation at,
                    const std::string& rule) {
  result_.migrated.insert(Migrated{location_of(sm, at), rule});
}

void Sink::warn(const clang::SourceManager& sm, clang::SourceLocation at, const std::string& rule,
                const std::string& message) {
  result_.warnings.insert(Warning{location_of(sm, at), rule, message, source_line(sm, at)});
}

SiteOutcome& Sink::site(const clang::SourceManager& sm, clang::SourceLocation at) {
  Location where = location_of(sm, at);
  SiteOutcome& outcome = result_.sites[where];
  outcome.report.where = where;
  outcome.report.source_line = source_line(sm, at);
  return outcome;
}

std::string Rule::text_of(const clang::SourceManager& sm, const clang::LangOptions& lang,
                          clang::SourceRange range) {
  return clang::Lexer::getSourceText(clang::CharSourceRange::getTokenRange(range), sm, lang).str();
}

bool Rule::in_macro_body(const clang::SourceManager& sm, clang::SourceRange range) {
  for (clang::SourceLocation loc : {range.getBegin(), range.getEnd()}) {
    if (loc.isMacroID() && !sm.isMacroArgExpansion(loc)) return true;
  }
  return false;
}

}  // namespace spmd::migrate
