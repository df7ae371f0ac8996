// SPDX-License-Identifier: Apache-2.0
// Prints what the registry selected (the platforms in use, the default first, and their device
// counts), or the error it raised; CTest runs it under different SPMD_PLATFORMS settings and
// matches the output (tests/backends/CMakeLists.txt). The test backend is linked in.
#include <cstdio>

#include "backend/registry.h"
#include "spmd/device.h"
#include "spmd/errors.h"

int main() {
  try {
    std::printf("default=%s", spmd::default_backend().c_str());
    for (const spmd::Platform& p : spmd::internal::platforms_in_use()) {
      std::printf(" %s:%d", std::string(p.name()).c_str(), spmd::device_count(p.name()));
    }
    std::printf("\n");
  } catch (const spmd::ValueError& e) {
    std::printf("ValueError: %s\n", e.what());
  }
  return 0;
}
