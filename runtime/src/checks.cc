// SPDX-License-Identifier: Apache-2.0
// The checks of values from callers (checks.h).
#include "checks.h"

#include <fmt/format.h>

#include <algorithm>

#include "backend/registry.h"
#include "exec/processes.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace {

std::string subject(std::string_view api, std::string_view arg) {
  return api.empty() ? std::string(arg) : fmt::format("{} {}", api, arg);
}

}  // namespace

bool checked_product(const std::vector<int64_t>& factors, int64_t& product) {
  int64_t p = 1;
  bool zero = false, overflow = false;
  for (int64_t f : factors) {
    if (f == 0) {
      zero = true;
    } else {
      overflow = overflow || __builtin_mul_overflow(p, f, &p);
    }
  }
  product = zero ? 0 : p;
  return !overflow;
}

int64_t checked_size_slow(const Shape& shape, std::string_view api, std::string_view arg) {
  for (int64_t extent : shape) {
    if (extent < 0) {
      throw ValueError(fmt::format(
          "{} must have every element be nonnegative, got {}: negative dimensions are not "
          "allowed.",
          subject(api, arg), shape_tuple_string(shape)));
    }
  }
  int64_t size = 0;
  if (!checked_product(shape, size)) {
    throw ValueError(fmt::format(
        "array is too big: {} {} has more elements than fit in int64 (the product of its nonzero "
        "extents overflows).",
        subject(api, arg), shape_tuple_string(shape)));
  }
  return size;
}

int64_t checked_bytes_slow(const Shape& shape, DType dtype, std::string_view api,
                           std::string_view arg) {
  const int64_t size = checked_size(shape, api, arg);
  // Like the count, the bytes spanned by the nonzero extents must fit (strides in bytes). Their
  // product fits: checked_size checked it. (Every new array comes here: nothing is allocated.)
  int64_t span = 1, bytes = 0;
  for (int64_t extent : shape) span *= std::max<int64_t>(extent, 1);
  if (__builtin_mul_overflow(span, itemsize(dtype), &bytes)) {
    throw ValueError(fmt::format(
        "array is too big: {} {} of {} spans {} elements of {} bytes (its nonzero extents), more "
        "bytes than fit in int64 (`size * itemsize` is larger than the maximum possible size).",
        subject(api, arg), shape_tuple_string(shape), dtype_name(dtype), span, itemsize(dtype)));
  }
  return size == 0 ? 0 : bytes;
}

int checked_axis(int axis, int ndim, std::string_view what) {
  if (axis < -ndim || axis >= ndim) {
    throw ValueError(
        fmt::format("{} {} is out of bounds for array of dimension {}", what, axis, ndim));
  }
  return axis < 0 ? axis + ndim : axis;
}

bool is_permutation(const std::vector<int>& perm, int64_t n) {
  if (static_cast<int64_t>(perm.size()) != n) return false;
  std::vector<bool> seen(perm.size(), false);
  for (int p : perm) {
    if (p < 0 || p >= n || seen[p]) return false;
    seen[p] = true;
  }
  return true;
}

void check_device(const Device& device, std::string_view what) {
  const std::vector<Platform>& in_use = platforms_in_use();
  bool platform_ok = false;
  for (const Platform& p : in_use) platform_ok = platform_ok || p == device.platform;
  if (!platform_ok) {
    std::string names;
    for (const Platform& p : in_use)
      names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name());
    throw ValueError(fmt::format(
        "{} holds {}, a device of platform '{}', which is not in use; the platforms in use are: "
        "{}. Take devices from spmd::devices().",
        what, device.str(), device.platform.name(), names));
  }
  // Ids are global: with L devices per process, process p owns ids [p*L, (p+1)*L).
  const int local = backend_for(device.platform).device_count();
  const int processes = process_layout().count;
  const int count = local * processes;
  if (device.id < 0 || device.id >= count) {
    throw ValueError(fmt::format(
        "{} holds {}, which is not a device of this runtime: platform '{}' has {} devices, with "
        "ids 0 to {}. Take devices from spmd::devices(), or start with more "
        "(spmd::initialize or SPMD_CPU_DEVICES for CPU devices).",
        what, device.str(), device.platform.name(), count, count - 1));
  }
  if (processes == 1 && device.process_index != 0) {
    throw ValueError(fmt::format(
        "{} holds {} of process {}, but this runtime runs one process (process 0); take devices "
        "from spmd::devices().",
        what, device.str(), device.process_index));
  }
  if (device.process_index != device.id / local) {
    throw ValueError(fmt::format(
        "{} holds {} of process {}, but {} belongs to process {} ({} devices per process); take "
        "devices from spmd::devices().",
        what, device.str(), device.process_index, device.str(), device.id / local, local));
  }
}

void check_devices(const std::vector<Device>& devices, std::string_view what) {
  std::vector<uint64_t> keys;  // platform index and id, to find repeats
  keys.reserve(devices.size());
  for (const Device& d : devices) {
    check_device(d, what);
    keys.push_back(uint64_t(platform_index(d.platform)) << 32 | static_cast<uint32_t>(d.id));
  }
  std::sort(keys.begin(), keys.end());
  const auto repeat = std::adjacent_find(keys.begin(), keys.end());
  if (repeat == keys.end()) return;
  const Device twice{static_cast<int>(*repeat & 0xffffffffu), platforms_in_use()[*repeat >> 32], 0};
  throw ValueError(fmt::format("{} must be distinct, but {} appears twice", what, twice.str()));
}

double checked_timeout(double seconds, std::string_view what) {
  if (!(seconds > 0) || !(seconds <= kMaxTimeoutS)) {
    throw ValueError(fmt::format(
        "{} must be a positive number of seconds, at most {:g} (every wait has a deadline), got "
        "{}",
        what, kMaxTimeoutS, seconds));
  }
  return seconds;
}

}  // namespace spmd::internal
