// SPDX-License-Identifier: Apache-2.0
// File: spmd/errors.h
//
// The exceptions spmd throws. One class per JAX exception kind, so code ported from JAX can catch
// the same kinds, plus the four faults of SPMD execution that JAX reports differently.
//
// Every message keeps the key phrases of JAX's message for the same condition and names the
// argument, the spec, the mesh axis sizes and the fix. An error raised on a device thread inside a
// mapped call is rethrown to the caller with that device recorded (`device()`, the platform and
// id), and the message starts with "[on cpu:3] ": errors a body raises, DeviceError,
// CollectiveMismatch (the device that found the mismatch) and CollectiveTimeout (the device whose
// deadline passed) all carry it. Errors raised before any body runs (bad arguments) carry none.
//
// Nothing else escapes spmd's public functions: bad arguments are ValueError, TypeError,
// IndexError or NameError, exhausted memory or threads ResourceExhausted.
//
// Example:
//   try {
//     spmd::shard_map(f, mesh, P("i"), P("i"))(spmd::arange(6));
//   } catch (const spmd::ValueError& e) {
//     // "shard_map applied to the function 'f' was given argument arrays with axis sizes that
//     //  are not evenly divisible by the corresponding mesh axis sizes: ..."
//   }
#pragma once

#include <optional>
#include <stdexcept>
#include <string>

#include "spmd/device.h"

namespace spmd {

// Base of every exception spmd throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message), message_(message) {}
  const char* what() const noexcept override { return message_.c_str(); }
  // The device whose body raised the error (or found the fault), when it came from a mapped call.
  const std::optional<Device>& device() const { return device_; }
  // Records the device and prefixes the message with "[on cpu:3] ". The first call wins.
  void set_device(const Device& device);

 private:
  std::string message_;
  std::optional<Device> device_;
};

// Wrong value: bad shapes, specs, sizes, permutations (JAX ValueError).
class ValueError : public Error {
 public:
  using Error::Error;
};
// Wrong kind of argument (JAX TypeError).
class TypeError : public Error {
 public:
  using Error::Error;
};
// An axis name that is not bound by an enclosing shard_map or pmap (JAX NameError).
class NameError : public Error {
 public:
  using Error::Error;
};
// Index out of range (JAX IndexError).
class IndexError : public Error {
 public:
  using Error::Error;
};
// A feature JAX does not implement either (JAX NotImplementedError).
class NotImplementedError : public Error {
 public:
  using Error::Error;
};
// JAX's RuntimeError (for example ppermute axis names out of mesh order).
class RuntimeError : public Error {
 public:
  using Error::Error;
};
// A device cannot take work: it is quarantined because its thread still runs the body of an
// earlier call that failed while that body was stuck in user code (docs/design.md, "Faults").
// The message starts with "UNAVAILABLE: " and names the device, the call and the fault; the
// device is usable again once that body returns.
class DeviceUnavailable : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};
// Memory or threads ran out (JAX's RESOURCE_EXHAUSTED runtime error). The message starts with
// "RESOURCE_EXHAUSTED: " and says what was asked for, on which device.
class ResourceExhausted : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
};
// A file could not be opened, read or written (Python's OSError; spmd::load, spmd::save).
class OSError : public Error {
 public:
  using Error::Error;
};

// Devices of one mapped call ran different collectives at the same point of their programs
// (different op, axes, dtype or shape), or one device returned from the body while others waited
// in a collective. Raised on every participant; the message lists what each device ran.
class CollectiveMismatch : public Error {
 public:
  using Error::Error;
};
// A collective did not complete within its deadline (SPMD_COLLECTIVE_TIMEOUT_S, default 300 s).
// The message names the devices that did not arrive and where each one is.
class CollectiveTimeout : public Error {
 public:
  using Error::Error;
};
// A multi-process run failed as a whole (spmd/distributed.h): the coordinator did not answer,
// the processes disagree about the run (process counts, device counts), or another process died
// or left during a collective. The message names the address or the process.
class DistributedError : public Error {
 public:
  using Error::Error;
};
// A device body raised an exception that is not an spmd::Error. The original exception is nested
// (std::rethrow_if_nested gives it back).
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace spmd
