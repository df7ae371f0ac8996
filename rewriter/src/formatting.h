// SPDX-License-Identifier: Apache-2.0
// Formatting the edits of one file with clang-format, in time linear in the file, and keeping the
// file's line ends.
//
// clang-format's formatReplacements checks every line of a file against every edited range, which
// is quadratic in a file with thousands of sites. So the file is cut into windows of whole
// top-level declarations (never inside a function or a class; namespaces and extern "C" blocks
// are reopened around each window, so indentation comes out as in the whole file), each window
// with the edits it holds is formatted alone, and the results are joined. A file the cutter cannot
// read (unbalanced braces across #if branches, macros that open namespaces) is formatted whole.
#pragma once

#include <clang/Format/Format.h>
#include <clang/Tooling/Core/Replacement.h>
#include <llvm/Support/Error.h>

#include <string>

namespace spmd::migrate {

enum class LineEnd { kLf, kCrLf, kCr };

// The line end most lines of `code` use ("\n" when tied or none).
LineEnd dominant_line_end(llvm::StringRef code);
const char* line_end_text(LineEnd end);

// `edits` (on `code`) with the lines they touch formatted in `style`: the replacements that,
// applied to `code`, give the formatted result. `code` uses "\n" or "\r\n" line ends.
llvm::Expected<clang::tooling::Replacements> format_edits(const std::string& code,
                                                          const clang::tooling::Replacements& edits,
                                                          const clang::format::FormatStyle& style);

}  // namespace spmd::migrate
