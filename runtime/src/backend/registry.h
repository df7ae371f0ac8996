// SPDX-License-Identifier: Apache-2.0
// Internal: the backend registry. Each backend registers its platform, a preference and a factory;
// the registry decides which platforms are in use (InitOptions::platforms / SPMD_PLATFORMS, else
// every registered platform that has devices) and creates each backend once, at first use.
//
// The backends built into the library register from register_builtin_backends(), which CMake
// generates from the list of backend folders (runtime/CMakeLists.txt); a program or test may
// register more (tests/backends/ does) before the devices are first used.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "backend/backend.h"

namespace spmd::internal {

struct BackendRegistration {
  // The platform's name, in static storage ("cpu").
  Platform platform = Platform::kCpu;
  // By default the platform in use with the highest preference is the default platform.
  int preference = 0;
  // Creates the backend; runs once, on the platform's first use.
  std::function<std::unique_ptr<Backend>()> create;
};

// Adds a backend. ValueError for a platform registered twice or after the devices were first
// used.
void register_backend(BackendRegistration registration);

// Registers the backends this library was built with (generated; see the file comment).
void register_builtin_backends();

// Whether the platforms in use are fixed (the devices were used).
bool devices_in_use();

// The platforms in use, the default one first.
const std::vector<Platform>& platforms_in_use();
// The platform in use named `name` (empty: the default platform); ValueError naming the platforms
// in use otherwise.
Platform platform_in_use(std::string_view name);
// The position of `platform` in platforms_in_use(), for per-platform tables; ValueError if it is
// not in use.
int platform_index(Platform platform);

// The backend of a platform in use (ValueError otherwise) and of a device's platform.
Backend& backend_for(Platform platform);
inline Backend& backend_for(const Device& device) { return backend_for(device.platform); }

}  // namespace spmd::internal
