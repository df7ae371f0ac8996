// SPDX-License-Identifier: Apache-2.0
// spmd::random on top of the bit-exact threefry implementation (random/threefry.h). Samples are
// generated on the host and placed on the current device.
#include "spmd/random.h"

#include <fmt/format.h>

#include "array_impl.h"
#include "checks.h"
#include "random/threefry.h"
#include "spmd/errors.h"

namespace spmd::random {
namespace {

using internal::prng::Key;

Key key_of(const Array& key, const char* api) {
  if (key.dtype() != DType::kUInt32 || key.shape() != Shape{2}) {
    throw TypeError(fmt::format(
        "{} expects a raw uint32[2] key (spmd::random::PRNGKey or a row of split), got {}", api,
        type_string(key.dtype(), key.shape())));
  }
  std::vector<uint32_t> v = key.to_vector<uint32_t>();
  return Key{v[0], v[1]};
}

// Validates the shape of `count` samples of `dtype` that `api` generates on the host before they
// go to the device: a valid shape, and host memory for them.
void check_sample_shape(const Shape& shape, DType dtype, const char* api) {
  const int64_t bytes = internal::checked_bytes(shape, dtype, api);
  internal::check_host_memory(internal::current_device(), static_cast<size_t>(bytes));
}

Array key_array(Key k, uint64_t vma) {
  return internal::with_vma(Array::from_vector(std::vector<uint32_t>{k[0], k[1]}), vma);
}

}  // namespace

Array PRNGKey(int64_t seed) { return key_array(internal::prng::seed(seed), 0); }

Array split(const Array& key, int64_t num) {
  if (num < 0) throw ValueError(fmt::format("split: num must be >= 0, got {}", num));
  check_sample_shape({num, 2}, DType::kUInt32, "split");
  std::vector<uint32_t> keys = internal::prng::split(key_of(key, "split"), num);
  return internal::with_vma(Array::from_vector(keys, Shape{num, 2}), internal::vma_of(key));
}

Array fold_in(const Array& key, uint32_t data) {
  return key_array(internal::prng::fold_in(key_of(key, "fold_in"), data), internal::vma_of(key));
}

Array fold_in(const Array& key, const Array& data) {
  if (data.ndim() != 0 || !(is_integer(data.dtype()) || data.dtype() == DType::kBool)) {
    throw TypeError(fmt::format("fold_in data must be a scalar integer array, got {}",
                                type_string(data.dtype(), data.shape())));
  }
  uint32_t value = data.astype(DType::kUInt32).item<uint32_t>();
  return key_array(internal::prng::fold_in(key_of(key, "fold_in"), value),
                   internal::vma_of(key) | internal::vma_of(data));
}

Array bits(const Array& key, Shape shape) {
  check_sample_shape(shape, DType::kUInt32, "bits");
  std::vector<uint32_t> v = internal::prng::random_bits(key_of(key, "bits"), shape_size(shape));
  return internal::with_vma(Array::from_vector(v, shape), internal::vma_of(key));
}

Array uniform(const Array& key, Shape shape, DType dtype, double minval, double maxval) {
  Key k = key_of(key, "uniform");
  check_sample_shape(shape, dtype == DType::kFloat64 ? dtype : DType::kFloat32, "uniform");
  int64_t n = shape_size(shape);
  Array out;
  if (dtype == DType::kFloat32) {
    out = Array::from_vector(
        internal::prng::uniform_f32(k, n, static_cast<float>(minval), static_cast<float>(maxval)),
        shape);
  } else if (dtype == DType::kFloat64) {
    out = Array::from_vector(internal::prng::uniform_f64(k, n, minval, maxval), shape);
  } else {
    throw NotImplementedError(fmt::format(
        "uniform supports float32 and float64 (bit-exact with jax.random), got {}; draw float32 "
        "and convert with astype",
        dtype_name(dtype)));
  }
  return internal::with_vma(out, internal::vma_of(key));
}

Array normal(const Array& key, Shape shape, DType dtype) {
  if (dtype != DType::kFloat32) {
    throw NotImplementedError(fmt::format(
        "normal supports float32 (bit-exact with jax.random), got {}; draw float32 and convert "
        "with astype",
        dtype_name(dtype)));
  }
  check_sample_shape(shape, dtype, "normal");
  std::vector<float> v = internal::prng::normal_f32(key_of(key, "normal"), shape_size(shape));
  return internal::with_vma(Array::from_vector(v, shape), internal::vma_of(key));
}

}  // namespace spmd::random
