// SPDX-License-Identifier: Apache-2.0
// A unified diff (diff -u, three lines of context) computed in-process from the edits themselves:
// no shell, no temporary files, and linear in the file (each edit's lines become one change,
// without the lines it leaves equal). `patch` applied to the original gives the edited file.
#pragma once

#include <string>
#include <vector>

#include "migration.h"

namespace spmd::migrate {

// The diff of `before` and `before` with `edits` applied (sorted by offset, not overlapping;
// their paths are ignored), labelled a<path> and b<path>. Empty when nothing changes.
std::string unified_diff(const std::string& path, const std::string& before,
                         const std::vector<Edit>& edits);

}  // namespace spmd::migrate
