// SPDX-License-Identifier: Apache-2.0
// spmd::distributed in a build without Gloo (SPMD_DISTRIBUTED=OFF): one process only, and an
// error that says how to get multi-process runs.
#include "spmd/distributed.h"
#include "spmd/errors.h"

namespace spmd::distributed {

void initialize(Options) {
  throw NotImplementedError(
      "spmd::distributed::initialize: this spmd was built without multi-process support "
      "(SPMD_DISTRIBUTED=OFF, or Gloo was not found). Install libgloo-dev (scripts/setup.sh) and "
      "configure again.");
}

void shutdown() {}

bool is_initialized() { return false; }

}  // namespace spmd::distributed
