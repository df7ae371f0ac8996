// SPDX-License-Identifier: Apache-2.0
// Internal: the checks of values that reach spmd from its callers, one helper per kind of value:
// shapes and extents, axis indices, permutations, device lists, timeouts and counts. Public
// functions validate their arguments through these, so that every bad value gets the same named
// error (ValueError unless said otherwise) naming the API, the argument and the value, before
// anything is allocated, launched or indexed with it.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "spmd/device.h"
#include "spmd/dtype.h"

namespace spmd::internal {

// The checks of checked_size with their messages, for a shape with an extent <= 0 or an
// overflowing product.
int64_t checked_size_slow(const Shape& shape, std::string_view api, std::string_view arg);
// The element count of `shape`: every extent must be >= 0 and the count must fit in int64, even
// when a zero extent makes it 0 (as NumPy: the product of the nonzero extents must fit, so that
// strides do).
// `api` and `arg` name the value in messages ("zeros", "shape"); an empty `api` gives a message
// about "shape (...)" alone.
inline int64_t checked_size(const Shape& shape, std::string_view api,
                            std::string_view arg = "shape") {
  // Every array op sizes a few shapes: positive extents whose product fits take one inline loop;
  // zero, negative and overflowing ones the checks and messages of checked_size_slow.
  int64_t size = 1;
  bool fast = true;
  for (int64_t extent : shape)
    fast = fast && extent > 0 && !__builtin_mul_overflow(size, extent, &size);
  return fast ? size : checked_size_slow(shape, api, arg);
}
// The checks of checked_bytes with their messages (see checked_size_slow).
int64_t checked_bytes_slow(const Shape& shape, DType dtype, std::string_view api,
                           std::string_view arg);
// checked_size, and the byte count of an array of `dtype` over `shape` (over its nonzero extents
// when it has a zero one) must fit in int64 too.
inline int64_t checked_bytes(const Shape& shape, DType dtype, std::string_view api,
                             std::string_view arg = "shape") {
  // Every new array comes here; the fast path of checked_size, in bytes.
  int64_t bytes = itemsize(dtype);
  bool fast = true;
  for (int64_t extent : shape)
    fast = fast && extent > 0 && !__builtin_mul_overflow(bytes, extent, &bytes);
  return fast ? bytes : checked_bytes_slow(shape, dtype, api, arg);
}
// Sets `product` to the product of `factors` (each >= 0); false when the product of the nonzero
// factors overflows int64.
bool checked_product(const std::vector<int64_t>& factors, int64_t& product);

// `axis` normalised into [0, ndim): negative axes count from the end. ValueError "{what} {axis}
// is out of bounds for array of dimension {ndim}" (NumPy's AxisError) otherwise.
int checked_axis(int axis, int ndim, std::string_view what = "axis");

// True when `perm` holds every value of [0, n) exactly once.
bool is_permutation(const std::vector<int>& perm, int64_t n);

// ValueError unless `device` is a device of this runtime: its platform is in use, its id is one
// of that platform's devices and it belongs to this process. `what` names the argument
// ("Mesh devices", "device_put device").
void check_device(const Device& device, std::string_view what);
// check_device for every entry, and no device twice.
void check_devices(const std::vector<Device>& devices, std::string_view what);

// The largest deadline accepted, in seconds (about 31 years): longer ones overflow the clock.
inline constexpr double kMaxTimeoutS = 1e9;
// ValueError unless `seconds` is a positive finite number of seconds at most kMaxTimeoutS. `what`
// names the setting ("ShardMapOptions::collective_timeout_s").
double checked_timeout(double seconds, std::string_view what);

}  // namespace spmd::internal
