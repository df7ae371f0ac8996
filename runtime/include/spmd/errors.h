// File: spmd/errors.h
//
// The exceptions spmd throws. One class per JAX exception kind, so code ported from JAX can catch
// the same kinds, plus the three faults of SPMD execution that JAX reports differently.
//
// Every message keeps the key phrases of JAX's message for the same condition and names the
// argument, the spec, the mesh axis sizes and the fix. An error raised on a device thread inside a
// mapped call is rethrown to the caller with that device recorded (`device()`), and the message
// starts with "[on cpu:3] ".
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

namespace spmd {

// Base of every exception spmd throws.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message), message_(message) {}
  const char* what() const noexcept override { return message_.c_str(); }
  // The id of the device whose thread raised the error, when it came from a mapped body.
  std::optional<int> device() const { return device_; }
  // Records the device that raised the error and prefixes the message with it. Idempotent.
  void set_device(int device_id, const std::string& device_str);

 private:
  std::string message_;
  std::optional<int> device_;
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
// A device body raised an exception that is not an spmd::Error. The original exception is nested
// (std::rethrow_if_nested gives it back).
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace spmd
