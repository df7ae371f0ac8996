// SPDX-License-Identifier: Apache-2.0
// Device lists and process-wide settings (spmd/device.h, settings.h).
#include "spmd/device.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <string>

#include "backend/registry.h"
#include "checks.h"
#include "exec/futex.h"
#include "exec/processes.h"
#include "settings.h"
#include "spmd/errors.h"

namespace spmd {
namespace internal {
namespace {

// The value of environment variable `name`, or nullopt when it is unset or empty. ValueError for
// text that is not a number.
std::optional<double> env_number(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (*end != '\0') {
    throw ValueError(fmt::format("environment variable {} must be a number, got '{}'", name, text));
  }
  return value;
}

int checked_cpu_devices(double count, const char* what) {
  if (!(count >= 1 && count <= kMaxCpuDevices) || count != std::floor(count)) {
    throw ValueError(
        fmt::format("{} must be a whole number from 1 to {} (one host thread per device), got {:g}",
                    what, kMaxCpuDevices, count));
  }
  return static_cast<int>(count);
}

Settings requested(const InitOptions& options) {
  Settings s;
  if (options.cpu_devices) {
    s.cpu_devices = checked_cpu_devices(*options.cpu_devices, "InitOptions::cpu_devices");
  } else if (std::optional<double> env = env_number("SPMD_CPU_DEVICES")) {
    s.cpu_devices = checked_cpu_devices(*env, "environment variable SPMD_CPU_DEVICES");
  } else {
    s.cpu_devices = std::min(available_cores(), kMaxCpuDevices);
  }
  if (options.collective_timeout_s) {
    s.timeout_s =
        checked_timeout(*options.collective_timeout_s, "InitOptions::collective_timeout_s");
  } else if (std::optional<double> env = env_number("SPMD_COLLECTIVE_TIMEOUT_S")) {
    s.timeout_s = checked_timeout(*env, "environment variable SPMD_COLLECTIVE_TIMEOUT_S");
  }
  const char* platforms = std::getenv("SPMD_PLATFORMS");
  s.platforms = options.platforms.value_or(platforms != nullptr ? platforms : "");
  return s;
}

std::mutex& settings_mutex() {
  static std::mutex mu;
  return mu;
}
// Null until the first initialize() or the first use of a device; set once (under
// settings_mutex), never replaced, so readers need no lock once it is set (every call reads it).
std::atomic<Settings*>& settings_slot() {
  static std::atomic<Settings*> settings{nullptr};
  return settings;
}

}  // namespace

const Settings& settings() {
  if (const Settings* set = settings_slot().load(std::memory_order_acquire)) return *set;
  std::lock_guard<std::mutex> lock(settings_mutex());
  std::atomic<Settings*>& slot = settings_slot();
  if (slot.load(std::memory_order_relaxed) == nullptr) {
    slot.store(new Settings(requested({})), std::memory_order_release);
  }
  return *slot.load(std::memory_order_relaxed);
}

}  // namespace internal

std::string Device::str() const { return fmt::format("{}:{}", platform.name(), id); }

void initialize(InitOptions options) {
  internal::Settings wanted = internal::requested(options);
  std::lock_guard<std::mutex> lock(internal::settings_mutex());
  std::atomic<internal::Settings*>& slot = internal::settings_slot();
  const internal::Settings* set = slot.load(std::memory_order_relaxed);
  if (set == nullptr) {
    slot.store(new internal::Settings(wanted), std::memory_order_release);
    return;
  }
  if (*set != wanted) {
    throw ValueError(fmt::format(
        "spmd::initialize must run before the devices are first used; they are already set up "
        "with cpu_devices={}, collective_timeout_s={:g} and platforms='{}', but this call asks "
        "for cpu_devices={}, collective_timeout_s={:g} and platforms='{}'. Call "
        "spmd::initialize once, at the start of main, or set SPMD_CPU_DEVICES / "
        "SPMD_COLLECTIVE_TIMEOUT_S / SPMD_PLATFORMS.",
        set->cpu_devices, set->timeout_s, set->platforms, wanted.cpu_devices, wanted.timeout_s,
        wanted.platforms));
  }
}

std::vector<Device> devices(std::string_view platform) {
  Platform p = internal::platform_in_use(platform);
  const int local = internal::backend_for(p).device_count();
  const int processes = internal::process_layout().count;
  std::vector<Device> out;
  out.reserve(static_cast<size_t>(local) * processes);
  for (int process = 0; process < processes; ++process) {
    for (int i = 0; i < local; ++i) out.push_back(Device{process * local + i, p, process});
  }
  return out;
}

std::vector<Device> devices() { return devices({}); }

int device_count(std::string_view platform) {
  return internal::backend_for(internal::platform_in_use(platform)).device_count() *
         internal::process_layout().count;
}

int device_count() { return device_count({}); }

std::vector<Device> local_devices(std::string_view platform) {
  Platform p = internal::platform_in_use(platform);
  const int local = internal::backend_for(p).device_count();
  const int process = internal::process_layout().index;
  std::vector<Device> out;
  for (int i = 0; i < local; ++i) out.push_back(Device{process * local + i, p, process});
  return out;
}

std::vector<Device> local_devices() { return local_devices({}); }

int local_device_count() {
  return internal::backend_for(internal::platform_in_use({})).device_count();
}

int process_index() { return internal::process_layout().index; }

int process_count() { return internal::process_layout().count; }

std::string default_backend() { return std::string(internal::platform_in_use({}).name()); }

double collective_timeout_s() { return internal::settings().timeout_s; }

}  // namespace spmd
