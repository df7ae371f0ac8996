// File: spmd/device.h
//
// Devices and process-wide initialisation.
//
// A CPU device is a logical device backed by one worker thread (threads idle in a call also run
// devices' bodies that have not started, one device at a time); several CPU devices share the
// machine's cores, so a laptop can test an 8-device mesh (the analogue of XLA's
// --xla_force_host_platform_device_count). The device count comes from `spmd::initialize`, else
// from the environment variable SPMD_CPU_DEVICES, else from the number of hardware threads. It is
// fixed at first use.
//
// Example:
//   spmd::initialize({.cpu_devices = 8});
//   for (const spmd::Device& d : spmd::devices()) fmt::print("{}\n", d.str());  // cpu:0 ... cpu:7
//
// Thread safety: every function here may be called from any thread.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "spmd/format.h"

namespace spmd {

enum class Platform { kCpu, kCuda };

struct Device {
  int id = 0;  // global device id, 0..device_count()-1
  Platform platform = Platform::kCpu;
  int process_index = 0;    // the process that owns the device (0 in a single process)
  std::string str() const;  // "cpu:3"
  bool operator==(const Device&) const = default;
};
// Prints d.str().
std::ostream& operator<<(std::ostream& os, const Device& d);

struct InitOptions {
  // Number of CPU devices; default: SPMD_CPU_DEVICES, else the number of hardware threads.
  std::optional<int> cpu_devices;
  // Deadline of every collective and rendezvous, in seconds; default: SPMD_COLLECTIVE_TIMEOUT_S,
  // else 300.
  std::optional<double> collective_timeout_s;
};

// Configures the devices. Must run before first use of any device; a later call with the same
// settings is a no-op and a different one is a ValueError naming the settings already in force.
void initialize(InitOptions options = {});

// All devices, in id order (JAX's jax.devices()).
std::vector<Device> devices();
int device_count();

// The collective deadline in force, in seconds.
double collective_timeout_s();

}  // namespace spmd

template <>
struct fmt::formatter<spmd::Device> : spmd::internal::StrFormatter<spmd::Device> {};
