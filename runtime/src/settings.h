// SPDX-License-Identifier: Apache-2.0
// Internal: the process-wide settings of spmd/device.h (InitOptions, else the environment), fixed
// at first use.
#pragma once

#include <string>

namespace spmd::internal {

// The most CPU devices a process may have: each is a host thread.
inline constexpr int kMaxCpuDevices = 4096;

struct Settings {
  int cpu_devices = 0;     // InitOptions::cpu_devices, SPMD_CPU_DEVICES or the cores
  double timeout_s = 300;  // InitOptions::collective_timeout_s or SPMD_COLLECTIVE_TIMEOUT_S
  std::string platforms;   // InitOptions::platforms or SPMD_PLATFORMS; empty: every platform
  bool operator==(const Settings&) const = default;
};

// The settings in force (fixing them on first use).
const Settings& settings();

}  // namespace spmd::internal
