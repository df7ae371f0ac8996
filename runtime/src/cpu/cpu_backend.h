// Internal: the CPU backend. Devices are worker threads over host memory, so any device may read
// any other device's buffers (zero-copy collectives and block formation).
#pragma once

#include "backend/backend.h"

namespace spmd::internal {

Backend& cpu_backend();

}  // namespace spmd::internal
