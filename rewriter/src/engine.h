// SPDX-License-Identifier: Apache-2.0
// Runs the rules over translation units (each with its own ClangTool and file system, so that TUs
// from different directories never share a working directory), in parallel.
#pragma once

#include <clang/Tooling/CompilationDatabase.h>

#include <functional>
#include <string>
#include <vector>

#include "migration.h"

namespace spmd::migrate {

// Migrates one translation unit. A TU with compile errors is marked failed and keeps no edits.
TuResult migrate_tu(const clang::tooling::CompilationDatabase& db, const std::string& file);

// Migrates every file with `jobs` threads; `progress(done, total, file)` is called as TUs finish
// (serially). Results come back in the order of `files`.
std::vector<TuResult> migrate_all(
    const clang::tooling::CompilationDatabase& db, const std::vector<std::string>& files, int jobs,
    const std::function<void(size_t, size_t, const std::string&)>& progress);

}  // namespace spmd::migrate
