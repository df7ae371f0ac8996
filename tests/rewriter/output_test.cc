// SPDX-License-Identifier: Apache-2.0
// Unit tests of spmd-migrate's output helpers: windowed formatting gives what clang-format gives
// on the whole file, line ends are read by majority, the in-process diff patches the file, and a
// plan applies each edit once and counts no site of a file it cannot edit.
#include "output.h"

#include <clang/Format/Format.h>
#include <clang/Tooling/Core/Replacement.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "formatting.h"
#include "unified_diff.h"

namespace spmd::migrate {
namespace {

// A generated-code-like replacement of every `pmap(f)` in `code`.
clang::tooling::Replacements pmap_edits(const std::string& code) {
  clang::tooling::Replacements edits;
  const std::string needle = "pmap(f)";
  for (size_t at = code.find(needle); at != std::string::npos; at = code.find(needle, at + 1)) {
    std::string text =
        "[f = f](const spmd::Array& a0) {\n"
        "spmd::Mesh mesh = spmd::pmap_mesh({a0}, {{\"i\"}});\n"
        "auto block = [&](const spmd::Array& b0) { return spmd::expand_dims(f(spmd::squeeze(b0, "
        "0)), 0); };\n"
        "return spmd::shard_map(block, mesh, spmd::P(\"i\"), spmd::P(\"i\"), {.check_vma = "
        "false})(a0);\n}";
    llvm::consumeError(edits.add(clang::tooling::Replacement("f.cc", at, needle.size(), text)));
  }
  return edits;
}

// A file of `functions` functions (in namespaces, with a raw string, comments and an extern "C"
// block in the way), each with a pmap(f) to replace.
std::string many_sites(int functions) {
  std::string code = "#include <a.h>\n\nnamespace outer {\nnamespace {\n\n";
  for (int i = 0; i < functions; ++i) {
    std::string n = std::to_string(i);
    code +=
        "// A comment with a brace { and a quote \".\n"
        "int f" +
        n +
        "(int x) {\n  const char* s = R\"x({ \" })x\";\n"
        "  auto g = pmap(f);\n  return g(x) + 1'000;\n}\n\n";
    if (i % 7 == 3) code += "extern \"C\" {\nint c" + n + "(void);\n}\n\n";
    if (i % 11 == 5) code += "struct S" + n + " {\n  int m = pmap(f)(1);\n};\n\n";
  }
  return code + "}  // namespace\n}  // namespace outer\n";
}

std::string applied(const std::string& code, const clang::tooling::Replacements& r) {
  llvm::Expected<std::string> out = clang::tooling::applyAllReplacements(code, r);
  EXPECT_TRUE(static_cast<bool>(out));
  return out ? *out : "";
}

std::string whole_file(const std::string& code, const clang::format::FormatStyle& style) {
  llvm::Expected<clang::tooling::Replacements> r =
      clang::format::formatReplacements(code, pmap_edits(code), style);
  EXPECT_TRUE(static_cast<bool>(r));
  return r ? applied(code, *r) : "";
}

std::string windowed(const std::string& code, const clang::format::FormatStyle& style) {
  llvm::Expected<clang::tooling::Replacements> r = format_edits(code, pmap_edits(code), style);
  EXPECT_TRUE(static_cast<bool>(r));
  return r ? applied(code, *r) : "";
}

TEST(Formatting, WindowsMatchTheWholeFile) {
  std::string code = many_sites(120);
  clang::format::FormatStyle google =
      clang::format::getGoogleStyle(clang::format::FormatStyle::LK_Cpp);
  google.ColumnLimit = 100;
  EXPECT_EQ(windowed(code, google), whole_file(code, google));
  // Namespace indentation comes from the namespaces reopened around each window.
  clang::format::FormatStyle indented = google;
  indented.NamespaceIndentation = clang::format::FormatStyle::NI_All;
  EXPECT_EQ(windowed(code, indented), whole_file(code, indented));
  // A derived pointer alignment is the whole file's, in every window.
  clang::format::FormatStyle derived = google;
  derived.DerivePointerAlignment = true;
  std::string right = many_sites(100);
  for (size_t at = right.find("const char* s"); at != std::string::npos;
       at = right.find("const char* s", at)) {
    right.replace(at, 13, "const char *s");
  }
  EXPECT_EQ(windowed(right, derived), whole_file(right, derived));
}

TEST(Formatting, UnbalancedFilesAreFormattedWhole) {
  std::string code = many_sites(80);
  code.insert(code.find("int f40"), "#if A\nint open() {\n#else\nint open() {\n#endif\n}\n\n");
  clang::format::FormatStyle google =
      clang::format::getGoogleStyle(clang::format::FormatStyle::LK_Cpp);
  EXPECT_EQ(windowed(code, google), whole_file(code, google));
}

TEST(LineEnds, DominantEndWins) {
  EXPECT_EQ(dominant_line_end("a\nb\nc\r\n"), LineEnd::kLf);
  EXPECT_EQ(dominant_line_end("a\r\nb\r\nc\n"), LineEnd::kCrLf);
  EXPECT_EQ(dominant_line_end("a\rb\rc\n"), LineEnd::kCr);
  EXPECT_EQ(dominant_line_end("a\r\nb\n"), LineEnd::kLf);  // a tie keeps "\n"
  EXPECT_EQ(dominant_line_end("no line end"), LineEnd::kLf);
}

TEST(UnifiedDiff, HunksWithContext) {
  std::string before;
  for (int i = 1; i <= 20; ++i) before += "line " + std::to_string(i) + "\n";
  size_t at5 = before.find("line 5\n"), at7 = before.find("line 7\n");
  std::vector<Edit> edits = {{"x", static_cast<unsigned>(at5), 6, "five"},
                             {"x", static_cast<unsigned>(at7), 0, "inserted\n"}};
  EXPECT_EQ(unified_diff("/x", before, edits),
            "--- a/x\n+++ b/x\n@@ -2,8 +2,9 @@\n line 2\n line 3\n line 4\n-line 5\n+five\n"
            " line 6\n+inserted\n line 7\n line 8\n line 9\n");
}

TEST(UnifiedDiff, EndOfFile) {
  // An insertion at the end of a file without a final line end, and one at the end of a file
  // with one.
  EXPECT_EQ(unified_diff("/x", "a\nb", {{"x", 3, 0, "c"}}),
            "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+bc\n"
            "\\ No newline at end of file\n");
  EXPECT_EQ(unified_diff("/x", "a\n", {{"x", 2, 0, "b\n"}}),
            "--- a/x\n+++ b/x\n@@ -1,1 +1,2 @@\n a\n+b\n");
  EXPECT_EQ(unified_diff("/x", "a\n", {}), "");
}

// A file with `code` in a fresh folder (no .clang-format: edits are kept as generated), removed
// with the folder at the end of the test.
struct TempFile {
  explicit TempFile(const std::string& code) {
    char dir[] = "/tmp/spmd-output-test-XXXXXX";
    EXPECT_NE(mkdtemp(dir), nullptr);
    folder = dir;
    path = folder + "/a.cc";
    std::ofstream(path) << code;
  }
  ~TempFile() { std::filesystem::remove_all(folder); }
  std::string folder, path;
};

// One unit of `path` whose pvary rule edited "pvary" (offset 10) and whose pmap site, migrated,
// replaces offsets 0-21 with a copy that carries that edit when `absorbed`.
TuResult nested_edits(const std::string& path, bool absorbed) {
  TuResult unit;
  unit.file = path;
  Edit inner{path, 10, 5, "pcast"};
  unit.edits.insert(inner);
  unit.migrated.insert(Migrated{{path, 1, 11}, "pvary"});
  SiteOutcome& site = unit.sites[Location{path, 1, 1}];
  site.report.where = {path, 1, 1};
  site.edits.insert(Edit{path, 0, 21, "migrated(pcast(v, i))"});
  if (absorbed) site.absorbed.insert(inner);
  return unit;
}

TEST(Plan, EditsInsideACopiedRangeAreAppliedOnce) {
  TempFile file("pmap(f = pvary(v, i))\n");
  const std::string& path = file.path;
  Plan plan = make_plan({nested_edits(path, true)});
  EXPECT_TRUE(plan.errors.empty());
  EXPECT_EQ(plan.updated[path], "migrated(pcast(v, i))\n");
}

TEST(Plan, AFileItCannotEditCountsNoSite) {
  TempFile file("pmap(f = pvary(v, i))\n");
  Plan plan = make_plan({nested_edits(file.path, false)});  // the two edits conflict
  ASSERT_EQ(plan.errors.size(), 1u);
  EXPECT_NE(plan.errors[0].find("conflicting edits"), std::string::npos);
  EXPECT_TRUE(plan.updated.empty());
  std::ostringstream summary;
  write_summary(plan, summary);
  EXPECT_NE(summary.str().find("0 to change, 0 sites migrated"), std::string::npos)
      << summary.str();
}

}  // namespace
}  // namespace spmd::migrate
