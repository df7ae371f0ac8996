// SPDX-License-Identifier: Apache-2.0
// Translation-unit runs for spmd-migrate (engine.h).
#include "engine.h"

#include <clang/ASTMatchers/ASTMatchFinder.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Tooling/ArgumentsAdjusters.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/VirtualFileSystem.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "rule.h"

namespace spmd::migrate {
namespace {

// Builtin headers (stddef.h, ...) are looked up relative to the tool binary unless the command
// line says where they are; bake in the resource directory of the clang we were built against.
clang::tooling::ArgumentsAdjuster resource_dir_adjuster() {
  return [](const clang::tooling::CommandLineArguments& args, llvm::StringRef) {
    for (const std::string& a : args) {
      if (llvm::StringRef(a).startswith("-resource-dir")) return args;
    }
    clang::tooling::CommandLineArguments out = args;
    out.insert(out.begin() + (out.empty() ? 0 : 1), "-resource-dir=" CLANG_RESOURCE_DIR);
    return out;
  };
}

}  // namespace

TuResult migrate_tu(const clang::tooling::CompilationDatabase& db, const std::string& file) {
  TuResult result;
  result.file = file;
  Sink sink(result);
  std::vector<std::unique_ptr<Rule>> rules = make_rules(sink);
  clang::ast_matchers::MatchFinder finder;
  for (const std::unique_ptr<Rule>& rule : rules) rule->register_matchers(finder);

  clang::tooling::ClangTool tool(db, {file}, std::make_shared<clang::PCHContainerOperations>(),
                                 llvm::vfs::createPhysicalFileSystem());
  tool.appendArgumentsAdjuster(resource_dir_adjuster());
  // Only errors matter here; the legacy code's own deprecation warnings would be noise.
  tool.appendArgumentsAdjuster(
      clang::tooling::getInsertArgumentAdjuster("-w", clang::tooling::ArgumentInsertPosition::END));
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  auto options = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  clang::TextDiagnosticPrinter printer(os, options.get());
  tool.setDiagnosticConsumer(&printer);
  tool.setPrintErrorMessage(false);  // failed TUs are reported with their diagnostics instead
  int rc = tool.run(clang::tooling::newFrontendActionFactory(&finder).get());
  os.flush();
  if (rc != 0 || printer.getNumErrors() > 0) {
    result.failed = true;
    result.errors = diagnostics.empty() ? "the tool could not run on this file" : diagnostics;
    result.edits.clear();
    result.includes.clear();
    result.migrated.clear();
    result.warnings.clear();
  }
  return result;
}

std::vector<TuResult> migrate_all(
    const clang::tooling::CompilationDatabase& db, const std::vector<std::string>& files, int jobs,
    const std::function<void(size_t, size_t, const std::string&)>& progress) {
  std::vector<TuResult> results(files.size());
  std::atomic<size_t> next{0};
  std::mutex mu;
  size_t done = 0;
  auto worker = [&] {
    for (size_t i = next++; i < files.size(); i = next++) {
      results[i] = migrate_tu(db, files[i]);
      std::lock_guard<std::mutex> lock(mu);
      if (progress) progress(++done, files.size(), files[i]);
    }
  };
  std::vector<std::thread> threads;
  for (int t = 1; t < std::max(1, jobs); ++t) threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads) t.join();
  return results;
}

}  // namespace spmd::migrate
