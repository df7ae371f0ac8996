// SPDX-License-Identifier: Apache-2.0
// Windowed formatting and line ends (formatting.h).
#include "formatting.h"

#include <algorithm>
#include <optional>
#include <vector>

namespace spmd::migrate {
namespace {

// Below this many edits, formatting the whole file at once is cheap enough.
constexpr size_t kWholeFileEdits = 64;
// A window grows over top-level declarations up to about this many bytes.
constexpr size_t kWindowBytes = 4 * 1024;

// A line where a top-level declaration may start, and the namespace-like blocks open there (the
// text that opens each, `namespace a::b {` or `extern "C" {`).
struct Boundary {
  size_t offset;
  std::vector<std::string> scopes;
};

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

// Reads C++ just well enough to find where top-level declarations start: comments, string and
// character literals (raw strings too), numbers with digit separators, preprocessor lines, braces
// and parentheses. Nullopt when the braces do not balance.
class Cutter {
 public:
  explicit Cutter(llvm::StringRef code) : code_(code) {}

  std::optional<std::vector<Boundary>> cut() {
    std::vector<Boundary> out{{0, {}}};
    size_t line = 0;
    bool line_start = true;
    while (i_ < code_.size()) {
      char c = code_[i_];
      if (c == '\n') {
        line = ++i_;
        line_start = true;
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
        ++i_;
        continue;
      }
      if (line_start) {
        line_start = false;
        if (c == '#') {
          skip_directive();
          continue;
        }
        if (braces_ == 0 && parens_ == 0 && complete_ && pending_ == llvm::StringRef::npos &&
            line > out.back().offset) {
          out.push_back(Boundary{line, scopes_});
        }
      }
      if (!token()) return std::nullopt;
    }
    if (braces_ != 0 || parens_ != 0 || !scopes_.empty()) return std::nullopt;
    return out;
  }

 private:
  // One token at i_; false when the braces or parentheses do not balance.
  bool token() {
    char c = code_[i_];
    char next = i_ + 1 < code_.size() ? code_[i_ + 1] : '\0';
    if (c == '/' && next == '/') return skip_to_line_end(), true;
    if (c == '/' && next == '*') {
      size_t stop = code_.find("*/", i_ + 2);
      i_ = stop == llvm::StringRef::npos ? code_.size() : stop + 2;
      return true;
    }
    if (c == '"' || c == '\'') return other(), skip_quoted(c), true;
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && std::isdigit(static_cast<unsigned char>(next)))) {
      return other(), skip_number(), true;
    }
    if (is_ident(c)) return identifier(), true;
    ++i_;
    switch (c) {
      case '{':
        if (pending_ != llvm::StringRef::npos) {
          scopes_.push_back(code_.substr(pending_, i_ - pending_).str());
          pending_ = llvm::StringRef::npos;
          complete_ = true;
          return true;
        }
        ++braces_;
        return true;
      case '}':
        if (braces_ > 0) {
          if (--braces_ == 0 && parens_ == 0) complete_ = true;
          return true;
        }
        if (scopes_.empty()) return false;
        scopes_.pop_back();
        complete_ = true;
        return true;
      case '(':
      case '[':
        ++parens_;
        other();
        return true;
      case ')':
      case ']':
        other();
        return --parens_ >= 0;
      case ';':
        pending_ = llvm::StringRef::npos;
        if (braces_ == 0 && parens_ == 0) complete_ = true;
        return true;
      case ':':
        if (pending_ != llvm::StringRef::npos && pending_is_namespace_) return true;  // a::b
        other();
        return true;
      default:
        other();
        return true;
    }
  }

  // A token that is neither a terminator nor part of a namespace opener.
  void other() {
    if (braces_ == 0) complete_ = false;
    pending_ = llvm::StringRef::npos;
  }

  void identifier() {
    size_t start = i_;
    while (i_ < code_.size() && is_ident(code_[i_])) ++i_;
    llvm::StringRef word = code_.substr(start, i_ - start);
    if (i_ < code_.size() && (code_[i_] == '"' || code_[i_] == '\'')) {
      if (code_[i_] == '"' &&
          (word == "R" || word == "u8R" || word == "uR" || word == "UR" || word == "LR")) {
        return other(), skip_raw_string();
      }
      if (word == "u8" || word == "u" || word == "U" || word == "L") {
        other();
        return skip_quoted(code_[i_]);
      }
    }
    if (braces_ != 0 || parens_ != 0) return;
    if (word == "namespace") {
      pending_ = start;
      pending_is_namespace_ = true;
      complete_ = false;
    } else if (word == "extern" && pending_ == llvm::StringRef::npos) {
      pending_ = start;
      pending_is_namespace_ = false;
      complete_ = false;
      // extern "C" {: the string literal keeps the opener pending.
      size_t at = i_;
      while (at < code_.size() && (code_[at] == ' ' || code_[at] == '\t')) ++at;
      if (at < code_.size() && code_[at] == '"') {
        i_ = at;
        skip_quoted('"');
      } else {
        pending_ = llvm::StringRef::npos;
      }
    } else if (pending_ != llvm::StringRef::npos && pending_is_namespace_) {
      // namespace a::b::inline c {
    } else {
      other();
    }
  }

  void skip_quoted(char quote) {
    for (++i_; i_ < code_.size(); ++i_) {
      if (code_[i_] == '\\') {
        ++i_;
      } else if (code_[i_] == quote || code_[i_] == '\n') {
        ++i_;
        return;
      }
    }
  }

  void skip_raw_string() {
    size_t open = code_.find('(', i_);
    if (open == llvm::StringRef::npos) {
      i_ = code_.size();
      return;
    }
    std::string close = ")" + code_.substr(i_ + 1, open - i_ - 1).str() + "\"";
    size_t stop = code_.find(close, open);
    i_ = stop == llvm::StringRef::npos ? code_.size() : stop + close.size();
  }

  void skip_number() {
    while (i_ < code_.size()) {
      char c = code_[i_];
      bool exponent_sign =
          (c == '+' || c == '-') && i_ > 0 && llvm::StringRef("eEpP").contains(code_[i_ - 1]);
      if (!is_ident(c) && c != '.' && c != '\'' && !exponent_sign) return;
      ++i_;
    }
  }

  void skip_to_line_end() {
    size_t stop = code_.find('\n', i_);
    i_ = stop == llvm::StringRef::npos ? code_.size() : stop;
  }

  // A preprocessor line, with its backslash continuations.
  void skip_directive() {
    while (i_ < code_.size()) {
      size_t stop = code_.find('\n', i_);
      if (stop == llvm::StringRef::npos) {
        i_ = code_.size();
        return;
      }
      size_t last = stop;
      while (last > i_ && (code_[last - 1] == '\r' || code_[last - 1] == ' ')) --last;
      i_ = stop;
      if (last == i_ || code_[last - 1] != '\\') return;
      ++i_;
    }
  }

  llvm::StringRef code_;
  size_t i_ = 0;
  int braces_ = 0;
  int parens_ = 0;
  bool complete_ = true;                    // the last top-level declaration has ended
  size_t pending_ = llvm::StringRef::npos;  // start of `namespace ...` or `extern "C"` before its {
  bool pending_is_namespace_ = false;
  std::vector<std::string> scopes_;
};

// `style` with a derived pointer alignment fixed to what clang-format derives from the whole of
// `code` with `edits` applied (what it formats), so that every window formats pointers alike: a
// probe line formatted at the end of the file shows it (the probe, written without spaces, does
// not count in the derivation).
clang::format::FormatStyle fixed_pointer_alignment(const std::string& code,
                                                   const clang::tooling::Replacements& edits,
                                                   clang::format::FormatStyle style) {
  if (!style.DerivePointerAlignment) return style;
  llvm::Expected<std::string> edited = clang::tooling::applyAllReplacements(code, edits);
  if (!edited) {
    llvm::consumeError(edited.takeError());
    return style;
  }
  std::string probed = std::move(*edited);
  if (!probed.empty() && probed.back() != '\n') probed += '\n';
  const std::string probe = "int*spmd_migrate_probe_;";
  unsigned at = static_cast<unsigned>(probed.size());
  probed += probe + "\n";
  clang::tooling::Replacements r =
      clang::format::reformat(style, probed, {clang::tooling::Range(at, probe.size())});
  llvm::Expected<std::string> formatted = clang::tooling::applyAllReplacements(probed, r);
  if (!formatted) {
    llvm::consumeError(formatted.takeError());
    return style;
  }
  llvm::StringRef line = llvm::StringRef(*formatted).rtrim().rsplit('\n').second;
  style.DerivePointerAlignment = false;
  style.ReferenceAlignment = clang::format::FormatStyle::RAS_Pointer;
  if (line.startswith("int * ")) {
    style.PointerAlignment = clang::format::FormatStyle::PAS_Middle;
  } else if (line.startswith("int *")) {
    style.PointerAlignment = clang::format::FormatStyle::PAS_Right;
  } else {
    style.PointerAlignment = clang::format::FormatStyle::PAS_Left;
  }
  return style;
}

// Formats the edits in code[start, end) alone, with `scopes` reopened around it; adds the
// results (offsets in `code`) to `out`. False when a result falls outside the window.
bool format_window(const std::string& code, size_t start, size_t end,
                   const std::vector<Boundary>& cuts, size_t first_cut,
                   const std::vector<clang::tooling::Replacement>& edits,
                   const clang::format::FormatStyle& style, clang::tooling::Replacements& out) {
  std::string prefix, suffix;
  for (const std::string& scope : cuts[first_cut].scopes) {
    prefix += scope + "\n";
    suffix += "}\n";
  }
  std::string text = prefix + code.substr(start, end - start) + "\n" + suffix;
  clang::tooling::Replacements local;
  for (const clang::tooling::Replacement& e : edits) {
    unsigned offset = static_cast<unsigned>(e.getOffset() - start + prefix.size());
    if (llvm::Error err = local.add(clang::tooling::Replacement(
            e.getFilePath(), offset, e.getLength(), e.getReplacementText()))) {
      llvm::consumeError(std::move(err));
      return false;
    }
  }
  llvm::Expected<clang::tooling::Replacements> formatted =
      clang::format::formatReplacements(text, local, style);
  if (!formatted) {
    llvm::consumeError(formatted.takeError());
    return false;
  }
  for (const clang::tooling::Replacement& r : *formatted) {
    if (r.getOffset() < prefix.size() ||
        r.getOffset() + r.getLength() > prefix.size() + end - start) {
      return false;
    }
    unsigned offset = static_cast<unsigned>(r.getOffset() - prefix.size() + start);
    if (llvm::Error err = out.add(clang::tooling::Replacement(
            r.getFilePath(), offset, r.getLength(), r.getReplacementText()))) {
      llvm::consumeError(std::move(err));
      return false;
    }
  }
  return true;
}

// The windows' results, or nullopt when the file must be formatted whole.
std::optional<clang::tooling::Replacements> format_windows(
    const std::string& code, const clang::tooling::Replacements& edits,
    const clang::format::FormatStyle& style) {
  std::optional<std::vector<Boundary>> cuts = Cutter(code).cut();
  if (!cuts || cuts->size() < 2) return std::nullopt;
  clang::format::FormatStyle window_style = fixed_pointer_alignment(code, edits, style);
  auto cut_of = [&](size_t offset) {  // the declaration holding `offset`
    auto after = std::upper_bound(cuts->begin(), cuts->end(), offset,
                                  [](size_t o, const Boundary& b) { return o < b.offset; });
    return static_cast<size_t>(after - cuts->begin()) - 1;
  };
  auto cut_end = [&](size_t cut) {
    return cut + 1 < cuts->size() ? (*cuts)[cut + 1].offset : code.size();
  };
  clang::tooling::Replacements out;
  std::vector<clang::tooling::Replacement> window;
  size_t first = 0, last = 0;
  auto flush = [&] {
    bool ok = window.empty() || format_window(code, (*cuts)[first].offset, cut_end(last), *cuts,
                                              first, window, window_style, out);
    window.clear();
    return ok;
  };
  for (const clang::tooling::Replacement& e : edits) {
    size_t from = cut_of(e.getOffset());
    size_t to = cut_of(e.getOffset() + std::max(e.getLength(), 1u) - 1);
    bool joins =
        !window.empty() && (from <= last || cut_end(to) - (*cuts)[first].offset <= kWindowBytes);
    if (!joins) {
      if (!flush()) return std::nullopt;
      first = from;
    }
    last = std::max(last, to);
    if (window.empty()) last = to;
    window.push_back(e);
  }
  if (!flush()) return std::nullopt;
  return out;
}

}  // namespace

LineEnd dominant_line_end(llvm::StringRef code) {
  size_t lf = 0, crlf = 0, cr = 0;
  for (size_t i = 0; i < code.size(); ++i) {
    if (code[i] == '\n') {
      ++lf;
    } else if (code[i] == '\r') {
      bool pair = i + 1 < code.size() && code[i + 1] == '\n';
      ++(pair ? crlf : cr);
      i += pair ? 1 : 0;
    }
  }
  if (crlf > lf && crlf >= cr) return LineEnd::kCrLf;
  if (cr > lf && cr > crlf) return LineEnd::kCr;
  return LineEnd::kLf;
}

const char* line_end_text(LineEnd end) {
  switch (end) {
    case LineEnd::kCrLf:
      return "\r\n";
    case LineEnd::kCr:
      return "\r";
    case LineEnd::kLf:
      break;
  }
  return "\n";
}

llvm::Expected<clang::tooling::Replacements> format_edits(const std::string& code,
                                                          const clang::tooling::Replacements& edits,
                                                          const clang::format::FormatStyle& style) {
  if (style.DisableFormat) return edits;
  if (edits.size() > kWholeFileEdits) {
    if (std::optional<clang::tooling::Replacements> windowed = format_windows(code, edits, style)) {
      return *windowed;
    }
  }
  return clang::format::formatReplacements(code, edits, style);
}

}  // namespace spmd::migrate
