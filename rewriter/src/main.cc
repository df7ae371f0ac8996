// SPDX-License-Identifier: Apache-2.0
// spmd-migrate: rewrites legacy spmd::pmap code (and JAX's other deprecated pmap-era helpers)
// into spmd::shard_map code that gives the same results, and reports every site it cannot
// migrate faithfully as a clang-style warning with the reason and the manual fix.
//
//   spmd-migrate -p build src/a.cc src/b.cc         report (default): diagnostics + summary
//   spmd-migrate -p build --diff src/a.cc           unified diff
//   spmd-migrate -p build -i src/a.cc               rewrite in place
//   spmd-migrate -p build --export-fixes=fixes.yaml src/a.cc   clang-apply-replacements YAML
//   spmd-migrate src/a.cc -- -std=c++20 -Iinclude   without a compilation database
#include <clang/Tooling/CommonOptionsParser.h>
#include <llvm/Support/CommandLine.h>
#include <unistd.h>

#include <iostream>

#include "engine.h"
#include "output.h"
#include "spmd/version.h"

namespace {

namespace cl = llvm::cl;

cl::OptionCategory category("spmd-migrate options");
cl::opt<bool> diff("diff", cl::desc("Print a unified diff of the migration"), cl::cat(category));
cl::opt<bool> in_place("i", cl::desc("Rewrite the files in place"), cl::cat(category));
cl::alias in_place_long("in-place", cl::desc("Alias for -i"), cl::aliasopt(in_place));
cl::opt<std::string> export_fixes(
    "export-fixes", cl::desc("Write the edits as clang-apply-replacements YAML to <file>"),
    cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> report("report",
                            cl::desc("Write a report of every site to <file> (.md or .json)"),
                            cl::value_desc("file"), cl::cat(category));
cl::opt<unsigned> jobs("j", cl::desc("Number of translation units processed in parallel"),
                       cl::init(1), cl::cat(category));
cl::opt<bool> allow_remaining("allow-remaining",
                              cl::desc("Exit 0 even when sites are left for a human"),
                              cl::cat(category));
cl::opt<bool> quiet("quiet", cl::desc("Print no summary and no progress"), cl::cat(category));

const char* kOverview = R"(spmd-migrate rewrites legacy spmd::pmap code into spmd::shard_map code.

It migrates every spmd::pmap construct whose calls it can see into a lambda with the same call
signature that runs spmd::shard_map and gives the same results (and the same errors), and rewrites
JAX's other deprecated pmap-era helpers (pvary, device_put_replicated, device_put_sharded). Every
site it cannot migrate faithfully is left as it is and reported as
  file:line:col: warning: <reason and manual fix> [spmd-migrate-<rule>]
(docs/migration.md lists the rules and their manual fixes). A file that does not compile is never
edited. Nested pmaps are migrated whole or not at all: the tool follows calls across every file
given in the same run.

Modes (default: report the sites and a summary; nothing is written):
  --diff                 print a unified diff of the migration
  -i                     rewrite the files in place: each file is replaced only after its new
                         contents were written completely and flushed; mode, owner and hard
                         links are kept; read-only files are refused
  --export-fixes=<file>  write the edits as clang-apply-replacements YAML
  --report=<file>        write a Markdown (.md) or JSON (.json) report of every site

Exit codes:
  0  every site was migrated (or there was nothing to migrate)
  1  some sites were left for a human (each reported as a warning); see --allow-remaining
  2  a file did not compile, edits conflicted, a file could not be written, or bad usage

Examples:
  spmd-migrate -p build src/train.cc src/model.cc     report, with build/compile_commands.json
  spmd-migrate -p build --diff src/train.cc           review the edits
  spmd-migrate -p build -i src/*.cc                   migrate in place
  spmd-migrate src/a.cc -- -std=c++20 -Iinclude       without a compilation database
)";

cl::extrahelp common_help(clang::tooling::CommonOptionsParser::HelpMessage);

void print_version(llvm::raw_ostream& os) {
  os << "spmd-migrate (spmd) " << SPMD_VERSION_STRING << ", built with Clang "
     << SPMD_MIGRATE_CLANG_VERSION << "\n";
}

}  // namespace

int main(int argc, const char** argv) {
  cl::SetVersionPrinter(print_version);
  auto parser =
      clang::tooling::CommonOptionsParser::create(argc, argv, category, cl::OneOrMore, kOverview);
  if (!parser) {
    llvm::errs() << llvm::toString(parser.takeError());
    return 2;
  }
  const std::vector<std::string>& files = parser->getSourcePathList();
  const bool show_progress = !quiet && files.size() > 1 && isatty(STDERR_FILENO);
  std::vector<spmd::migrate::TuResult> results = spmd::migrate::migrate_all(
      parser->getCompilations(), files, static_cast<int>(jobs),
      [&](size_t done, size_t total, const std::string& file) {
        if (show_progress) {
          std::cerr << "\r[" << done << "/" << total << "] " << file << "\x1b[K" << std::flush;
          if (done == total) std::cerr << "\n";
        }
      });
  spmd::migrate::Plan plan = spmd::migrate::make_plan(results);

  spmd::migrate::write_diagnostics(plan, std::cerr);
  bool ok = plan.errors.empty() && plan.failed.empty();
  if (diff) spmd::migrate::write_diff(plan, std::cout);
  if (!export_fixes.empty())
    ok = spmd::migrate::write_fixes_yaml(plan, export_fixes, std::cerr) && ok;
  if (in_place) ok = spmd::migrate::write_in_place(plan, std::cerr) && ok;
  if (!report.empty()) ok = spmd::migrate::write_report(plan, report, std::cerr) && ok;
  if (!quiet) spmd::migrate::write_summary(plan, diff ? std::cerr : std::cout);
  if (!ok) return 2;
  return plan.warnings.empty() || allow_remaining ? 0 : 1;
}
