// SPDX-License-Identifier: Apache-2.0
// File: spmd/array.h
//
// Array: an immutable n-dimensional array with a dtype, living on one device or sharded over a
// mesh (JAX's jax.Array). Copies are cheap: they share the device buffers. Every operation returns
// a new Array; nothing mutates in place.
//
// Inside a shard_map or pmap body each argument is a per-device block, itself an Array on that
// device, and ops run on the device's thread.
//
// Example:
//   spmd::Array x = spmd::Array::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
//   spmd::Array y = spmd::transpose(x) * 2.0f;     // f32[3,2]
//   std::vector<float> v = y.to_vector<float>();   // {2, 8, 4, 10, 6, 12}
//   for (const spmd::Shard& s : y.addressable_shards()) { ... s.device, s.index, s.data ... }
//
// Thread safety: Arrays are values; concurrent reads of one Array from several threads are safe.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "spmd/device.h"
#include "spmd/dtype.h"
#include "spmd/format.h"
#include "spmd/sharding.h"

namespace spmd {

class Array;
namespace internal {
struct ArrayImpl;
struct ArrayAccess;
// Copies `count` elements of `dtype` from host memory into a new array of `shape`.
Array make_host_array(DType dtype, const void* data, Shape shape, size_t count);
// Writes the global value of `a`, converted to `as`, to `out` (a.size() elements).
void read_host(const Array& a, DType as, void* out);
// ValueError unless `a` has exactly one element.
void check_single_element(const Array& a, const char* what);
}  // namespace internal

class Array {
 public:
  // An invalid placeholder (valid() is false); any use other than assignment is an error.
  Array();

  // A host array on the default device (devices()[0]). `shape` defaults to {values.size()} and
  // must have values.size() elements (ValueError otherwise); Shape{} makes a scalar.
  template <class T>
  static Array from_vector(const std::vector<T>& values, std::optional<Shape> shape = std::nullopt);
  // A rank-0 array.
  template <class T>
  static Array scalar(T value) {
    return from_vector<T>(std::vector<T>{value}, Shape{});
  }

  bool valid() const { return impl_ != nullptr; }
  DType dtype() const;
  const Shape& shape() const;
  int ndim() const;
  int64_t size() const;  // number of elements

  // A host copy of the global value, row-major, converted to T (any of the 8 element types, or
  // bool). Sharded arrays are assembled from their shards; where several devices hold the same
  // index range (replicated mesh axes), the first device in mesh order is read, as in JAX.
  template <class T>
  std::vector<T> to_vector() const;
  // The single element of a size-1 array.
  template <class T>
  T item() const;

  Array reshape(Shape new_shape) const;               // one extent may be -1
  Array transpose(std::vector<int> perm = {}) const;  // default: reverse the dimensions
  Array astype(DType dtype) const;
  // x[i]: the sub-array at index i of the first dimension (negative i counts from the end).
  Array operator[](int64_t i) const;

  const Sharding& sharding() const;
  // One entry per device holding data: the device, the shard's index in the global array, and the
  // shard itself as a single-device Array.
  std::vector<struct Shard> addressable_shards() const;

  // True once the array was donated (pmap donate_argnums); any read then throws ValueError.
  bool is_deleted() const;

  // NumPy-style text, e.g. "[[1, 2],\n [3, 4]]" with dtype suffix for non-default dtypes.
  std::string str() const;

 private:
  friend struct internal::ArrayAccess;
  std::shared_ptr<internal::ArrayImpl> impl_;
  // The mesh axes (bit i = manual axis i of the enclosing call) this value may vary over; only
  // meaningful inside a mapped body (check_vma).
  uint64_t vma_ = 0;
};

struct Shard {
  Device device;
  Index index;
  Array data;
};

// Prints a.str().
std::ostream& operator<<(std::ostream& os, const Array& a);

// A copy of x laid out with `sharding` (each mesh device receives its block; blocks are shared
// with x instead of copied where the memory allows). ValueError when the spec does not fit x.
Array device_put(const Array& x, const NamedSharding& sharding);
// x assembled on one device.
Array device_put(const Array& x, const Device& device);

// ---- template implementations ----

template <class T>
Array Array::from_vector(const std::vector<T>& values, std::optional<Shape> shape) {
  Shape s = shape ? std::move(*shape) : Shape{static_cast<int64_t>(values.size())};
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return internal::make_host_array(DType::kBool, bytes.data(), std::move(s), values.size());
  } else {
    return internal::make_host_array(dtype_of_v<T>, values.data(), std::move(s), values.size());
  }
}

template <class T>
std::vector<T> Array::to_vector() const {
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(static_cast<size_t>(size()));
    internal::read_host(*this, DType::kBool, bytes.data());
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> out(static_cast<size_t>(size()));
    internal::read_host(*this, dtype_of_v<T>, out.data());
    return out;
  }
}

template <class T>
T Array::item() const {
  internal::check_single_element(*this, "item()");
  return to_vector<T>()[0];
}

}  // namespace spmd

template <>
struct fmt::formatter<spmd::Array> : spmd::internal::StrFormatter<spmd::Array> {};
