// SPDX-License-Identifier: Apache-2.0
// The runtime core without any backend: it links (the seam has no hidden dependency on a backend
// folder), and asking for devices is a clear error. Exit code 0 when both hold.
#include <cstdio>
#include <string>

#include "backend/registry.h"
#include "spmd/device.h"
#include "spmd/errors.h"

// What CMake generates from the backend list; here the list is empty.
void spmd::internal::register_builtin_backends() {}

int main() {
  try {
    spmd::devices();
  } catch (const spmd::ValueError& e) {
    const bool named =
        std::string(e.what()).find("no platform of this build has devices") != std::string::npos;
    std::printf("%s: %s\n", named ? "ok" : "unexpected message", e.what());
    return named ? 0 : 1;
  }
  std::printf("devices() returned without a backend\n");
  return 1;
}
