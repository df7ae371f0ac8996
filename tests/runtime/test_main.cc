// SPDX-License-Identifier: Apache-2.0
// Test entry point: every runtime test runs with 8 CPU devices, the mesh size of JAX's own tests
// (--xla_force_host_platform_device_count=8) and of the conformance cases.
#include <gtest/gtest.h>

#include "spmd/device.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  spmd::initialize({.cpu_devices = 8});
  return RUN_ALL_TESTS();
}
