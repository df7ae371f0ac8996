// SPDX-License-Identifier: Apache-2.0
// The backend registry (registry.h).
#include "backend/registry.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>

#include "settings.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace {

// The platforms in use and their backends, fixed at first use; never destroyed (buffers may be
// freed during static destruction).
struct InUse {
  std::vector<Platform> platforms;  // the default first
  std::vector<Backend*> backends;   // same order
};

struct Registry {
  std::mutex mu;
  std::vector<BackendRegistration> registrations;
  bool builtins_added = false;
  std::once_flag frozen;
  // Set once, under mu; read without call_once's synchronisation (every collective and launch
  // asks).
  std::atomic<const InUse*> in_use{nullptr};
};

Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}

std::string names(const std::vector<Platform>& platforms) {
  std::vector<std::string_view> out;
  for (const Platform& p : platforms) out.push_back(p.name());
  return fmt::format("{}", fmt::join(out, ", "));
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = std::min(text.find(',', begin), text.size());
    std::string item = text.substr(begin, end - begin);
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
    begin = end + 1;
  }
  return out;
}

// The platforms asked for by name, in the order given.
InUse select_named(std::vector<BackendRegistration>& all, const std::string& list) {
  std::vector<Platform> registered;
  for (const BackendRegistration& r : all) registered.push_back(r.platform);
  InUse in_use;
  // Backends made so far are freed if a later name is bad (in_use keeps them only on success).
  std::vector<std::unique_ptr<Backend>> made;
  for (const std::string& name : split_list(list)) {
    auto it = std::find_if(all.begin(), all.end(),
                           [&](const BackendRegistration& r) { return r.platform.name() == name; });
    if (it == all.end()) {
      throw ValueError(fmt::format(
          "platforms='{}' (InitOptions::platforms or SPMD_PLATFORMS) names '{}', which is not a "
          "platform of this build; the platforms built in are: {}.",
          list, name, names(registered)));
    }
    std::unique_ptr<Backend> backend = it->create();
    if (backend->device_count() == 0) {
      const std::string reason = backend->absent_reason();
      throw ValueError(fmt::format(
          "platforms='{}' (InitOptions::platforms or SPMD_PLATFORMS) asks for '{}', but it has no "
          "devices in this process{}. Leave it out of the list to run on the others.",
          list, name, reason.empty() ? "" : " (" + reason + ")"));
    }
    in_use.platforms.push_back(it->platform);
    made.push_back(std::move(backend));
  }
  if (in_use.platforms.empty()) {
    throw ValueError(fmt::format(
        "platforms='{}' (InitOptions::platforms or SPMD_PLATFORMS) names no platform; give a "
        "comma-separated list of: {}.",
        list, names(registered)));
  }
  for (std::unique_ptr<Backend>& backend : made) in_use.backends.push_back(backend.release());
  return in_use;
}

// Every registered platform that has devices, the most preferred first.
InUse select_present(std::vector<BackendRegistration>& all) {
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.preference > b.preference; });
  InUse in_use;
  for (BackendRegistration& r : all) {
    std::unique_ptr<Backend> backend = r.create();
    if (backend->device_count() == 0) continue;
    in_use.platforms.push_back(r.platform);
    in_use.backends.push_back(backend.release());
  }
  if (in_use.platforms.empty()) {
    throw ValueError(
        "no platform of this build has devices (is the CPU backend left out of the build, "
        "SPMD_BACKEND_CPU=OFF?)");
  }
  return in_use;
}

const InUse& in_use() {
  Registry& r = registry();
  if (const InUse* set = r.in_use.load(std::memory_order_acquire)) return *set;
  std::call_once(r.frozen, [&r] {
    // call_once runs one thread at a time, and again after a throw (a bad platforms setting).
    if (!r.builtins_added) {
      r.builtins_added = true;
      register_builtin_backends();
    }
    const Settings& s = settings();
    std::lock_guard<std::mutex> lock(r.mu);
    r.in_use.store(new InUse(s.platforms.empty() ? select_present(r.registrations)
                                                 : select_named(r.registrations, s.platforms)),
                   std::memory_order_release);
  });
  return *r.in_use.load(std::memory_order_acquire);
}

ValueError not_in_use(Platform platform, const InUse& u) {
  return ValueError(fmt::format("platform '{}' is not in use; the platforms in use are: {}",
                                platform.name(), names(u.platforms)));
}

}  // namespace

bool devices_in_use() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.in_use.load(std::memory_order_acquire) != nullptr;
}

void register_backend(BackendRegistration registration) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (r.in_use.load(std::memory_order_acquire) != nullptr) {
    throw ValueError(fmt::format("backend '{}' registered after the devices were first used",
                                 registration.platform.name()));
  }
  for (const BackendRegistration& other : r.registrations) {
    if (other.platform == registration.platform) {
      throw ValueError(
          fmt::format("backend '{}' is registered twice", registration.platform.name()));
    }
  }
  r.registrations.push_back(std::move(registration));
}

const std::vector<Platform>& platforms_in_use() { return in_use().platforms; }

Platform platform_in_use(std::string_view name) {
  const InUse& u = in_use();
  if (name.empty()) return u.platforms[0];
  for (const Platform& p : u.platforms) {
    if (p.name() == name) return p;
  }
  throw ValueError(fmt::format("platform '{}' is not in use; the platforms in use are: {}", name,
                               names(u.platforms)));
}

int platform_index(Platform platform) {
  const InUse& u = in_use();
  for (size_t i = 0; i < u.platforms.size(); ++i) {
    if (u.platforms[i] == platform) return static_cast<int>(i);
  }
  throw not_in_use(platform, u);
}

// Every kernel, buffer and aliasing check asks: one pass over the (usually one) platforms.
Backend& backend_for(Platform platform) {
  const InUse& u = in_use();
  for (size_t i = 0; i < u.platforms.size(); ++i) {
    if (u.platforms[i] == platform) return *u.backends[i];
  }
  throw not_in_use(platform, u);
}

}  // namespace spmd::internal
