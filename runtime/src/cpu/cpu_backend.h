// SPDX-License-Identifier: Apache-2.0
// Internal: the CPU backend. Devices are worker threads over host memory, so any device may read
// any other device's buffers (zero-copy collectives and block formation).
#pragma once

namespace spmd::internal {

// Registers the "cpu" platform (called from the generated register_builtin_backends()).
void register_cpu_backend();

}  // namespace spmd::internal
