// SPDX-License-Identifier: Apache-2.0
// File: spmd/device.h
//
// Devices, platforms and process-wide initialisation.
//
// A device belongs to a platform ("cpu", later "cuda"), each served by one backend. A CPU device
// is a logical device backed by one worker thread (threads idle in a call also run devices'
// bodies that have not started, one device at a time); several CPU devices share the machine's
// cores, so a laptop can test an 8-device mesh (the analogue of XLA's
// --xla_force_host_platform_device_count). The CPU device count comes from `spmd::initialize`,
// else from the environment variable SPMD_CPU_DEVICES, else from the number of hardware threads.
//
// Which platforms are used comes from InitOptions::platforms, else SPMD_PLATFORMS ("cpu",
// "cuda,cpu": JAX's JAX_PLATFORMS habit), else every platform built in that has devices. The
// first one listed (or, by default, the preferred one present) is the default platform:
// `devices()` lists its devices and arrays are created on its first device. Settings are fixed
// at first use.
//
// Example:
//   spmd::initialize({.cpu_devices = 8});
//   for (const spmd::Device& d : spmd::devices()) std::cout << d.str() << "\n";  // cpu:0 ...
//   std::vector<spmd::Device> cpus = spmd::devices("cpu");
//
// Thread safety: every function here may be called from any thread.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spmd/format.h"

namespace spmd {

// A device platform, named as JAX names them. A backend registers its platform with a name in
// static storage (a string literal); Platform::kCpu and Platform::kCuda are the built-in names.
class Platform {
 public:
  constexpr explicit Platform(std::string_view name) : name_(name) {}
  constexpr std::string_view name() const { return name_; }
  // Every device check compares platforms: the same literal (the usual case) needs no memcmp.
  constexpr bool operator==(const Platform& other) const {
    return (name_.data() == other.name_.data() && name_.size() == other.name_.size()) ||
           name_ == other.name_;
  }

  static const Platform kCpu;
  static const Platform kCuda;

 private:
  std::string_view name_;
};
inline constexpr Platform Platform::kCpu{"cpu"};
inline constexpr Platform Platform::kCuda{"cuda"};

struct Device {
  int id = 0;                          // device id within its platform, 0..device_count(p)-1
  Platform platform = Platform::kCpu;  // the platform whose backend runs the device
  int process_index = 0;               // the process that owns the device (0 in one process)
  std::string str() const;             // "cpu:3"
  bool operator==(const Device&) const = default;
};
// Prints d.str().
std::ostream& operator<<(std::ostream& os, const Device& d);

struct InitOptions {
  // Number of CPU devices, 1 to 4096 (each is a host thread); default: SPMD_CPU_DEVICES, else the
  // number of hardware threads.
  std::optional<int> cpu_devices;
  // Deadline of every collective and rendezvous, in seconds: positive, at most 1e9; default:
  // SPMD_COLLECTIVE_TIMEOUT_S, else 300.
  std::optional<double> collective_timeout_s;
  // Comma-separated platforms to use, the default one first ("cpu", "cuda,cpu"); default:
  // SPMD_PLATFORMS, else every registered platform that has devices, the preferred one first.
  std::optional<std::string> platforms;
};

// Configures the devices. Must run before first use of any device; a later call with the same
// settings is a no-op and a different one is a ValueError naming the settings already in force.
void initialize(InitOptions options = {});

// The devices of the default platform, or of `platform`, in id order (JAX's
// jax.devices(backend)). ValueError for a platform that is not in use, naming those that are.
// In a multi-process run (spmd/distributed.h) this is every process's devices, ordered by
// process: process p owns ids [p*L, (p+1)*L) where L = local_device_count().
std::vector<Device> devices();
std::vector<Device> devices(std::string_view platform);
int device_count();
int device_count(std::string_view platform);

// The devices this process owns (JAX's jax.local_devices()); devices() in one process.
std::vector<Device> local_devices();
std::vector<Device> local_devices(std::string_view platform);
int local_device_count();

// This process's index and the number of processes (JAX's jax.process_index() and
// jax.process_count()): 0 and 1 unless spmd::distributed::initialize ran.
int process_index();
int process_count();

// The default platform's name ("cpu"), JAX's jax.default_backend().
std::string default_backend();

// The collective deadline in force, in seconds.
double collective_timeout_s();

}  // namespace spmd

template <>
struct fmt::formatter<spmd::Device> : spmd::internal::StrFormatter<spmd::Device> {};
