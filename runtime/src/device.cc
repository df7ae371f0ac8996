// Device list and process-wide settings (spmd/device.h).
#include "spmd/device.h"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <string>

#include "exec/futex.h"
#include "spmd/errors.h"

namespace spmd {
namespace {

struct Settings {
  int cpu_devices = 0;
  double timeout_s = 300;
};

double env_number(const char* name, double fallback, bool integer) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  double value = std::strtod(text, &end);
  if (*end != '\0' || !(value > 0) || (integer && value != static_cast<int>(value))) {
    throw ValueError(fmt::format("environment variable {} must be a positive {}, got '{}'", name,
                                 integer ? "integer" : "number", text));
  }
  return value;
}

Settings requested(const InitOptions& options) {
  Settings s;
  s.cpu_devices = options.cpu_devices.value_or(static_cast<int>(
      env_number("SPMD_CPU_DEVICES", internal::available_cores(), /*integer=*/true)));
  s.timeout_s = options.collective_timeout_s.value_or(
      env_number("SPMD_COLLECTIVE_TIMEOUT_S", 300, /*integer=*/false));
  if (s.cpu_devices <= 0) {
    throw ValueError(
        fmt::format("InitOptions::cpu_devices must be positive, got {}", s.cpu_devices));
  }
  if (!(s.timeout_s > 0)) {
    throw ValueError(
        fmt::format("InitOptions::collective_timeout_s must be positive, got {}", s.timeout_s));
  }
  return s;
}

std::mutex& settings_mutex() {
  static std::mutex mu;
  return mu;
}
// Null until the first initialize() or the first use of a device.
Settings*& settings_slot() {
  static Settings* settings = nullptr;
  return settings;
}

const Settings& settings() {
  std::lock_guard<std::mutex> lock(settings_mutex());
  Settings*& slot = settings_slot();
  if (slot == nullptr) slot = new Settings(requested({}));
  return *slot;
}

}  // namespace

std::string Device::str() const {
  return fmt::format("{}:{}", platform == Platform::kCpu ? "cpu" : "cuda", id);
}

void initialize(InitOptions options) {
  Settings wanted = requested(options);
  std::lock_guard<std::mutex> lock(settings_mutex());
  Settings*& slot = settings_slot();
  if (slot == nullptr) {
    slot = new Settings(wanted);
    return;
  }
  if (slot->cpu_devices != wanted.cpu_devices || slot->timeout_s != wanted.timeout_s) {
    throw ValueError(fmt::format(
        "spmd::initialize must run before the devices are first used; they are already set up "
        "with cpu_devices={} and collective_timeout_s={:g}, but this call asks for "
        "cpu_devices={} and collective_timeout_s={:g}. Call spmd::initialize once, at the start "
        "of main, or set SPMD_CPU_DEVICES / SPMD_COLLECTIVE_TIMEOUT_S.",
        slot->cpu_devices, slot->timeout_s, wanted.cpu_devices, wanted.timeout_s));
  }
}

std::vector<Device> devices() {
  int n = device_count();
  std::vector<Device> out(n);
  for (int i = 0; i < n; ++i) out[i] = Device{i, Platform::kCpu, 0};
  return out;
}

int device_count() { return settings().cpu_devices; }

double collective_timeout_s() { return settings().timeout_s; }

}  // namespace spmd
