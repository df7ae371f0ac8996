// SPDX-License-Identifier: Apache-2.0
// Internal collectives that are not part of JAX's API (used by the benchmarks).
#pragma once

#include "spmd/collectives.h"

namespace spmd::internal {

// An empty collective over `axes`: returns once every device of the group has arrived. The
// benchmarks' synchronisation-floor reference.
void barrier(const AxisNames& axes);

}  // namespace spmd::internal
