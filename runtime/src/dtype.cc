// SPDX-License-Identifier: Apache-2.0
// spmd element types: float16/bfloat16 conversions, dtype names and JAX's promotion lattice.
#include "spmd/dtype.h"

#include <bit>
#include <iterator>

#include "backend/half_bits.h"
#include "checks.h"
#include "spmd/errors.h"

namespace spmd {
namespace {

struct DTypeInfo {
  std::string_view name;
  std::string_view short_name;
  int64_t itemsize;
};

// Indexed by the DType enumerator, whose order the header fixes.
constexpr DTypeInfo kDTypeInfo[] = {
    {"bool", "bool", 1},   {"int32", "i32", 4},     {"int64", "i64", 8},   {"uint32", "u32", 4},
    {"float16", "f16", 2}, {"bfloat16", "bf16", 2}, {"float32", "f32", 4}, {"float64", "f64", 8},
};

const DTypeInfo& info(DType dt) {
  const auto index = static_cast<size_t>(dt);
  if (index >= std::size(kDTypeInfo)) {
    throw ValueError("invalid DType value " + std::to_string(index));
  }
  return kDTypeInfo[index];
}

}  // namespace

float16_t::float16_t(float f)
    : bits(internal::float_bits_to_half_bits(std::bit_cast<uint32_t>(f))) {}

float16_t::operator float() const {
  return std::bit_cast<float>(internal::half_bits_to_float_bits(bits));
}

bfloat16_t::bfloat16_t(float f)
    : bits(internal::float_bits_to_bfloat16_bits(std::bit_cast<uint32_t>(f))) {}

bfloat16_t::operator float() const {
  return std::bit_cast<float>(internal::bfloat16_bits_to_float_bits(bits));
}

int64_t itemsize(DType dt) { return info(dt).itemsize; }

std::string_view dtype_name(DType dt) { return info(dt).name; }

std::string_view dtype_short_name(DType dt) { return info(dt).short_name; }

std::string type_string(DType dt, const Shape& shape) {
  std::string out(dtype_short_name(dt));
  out += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(shape[i]);
  }
  out += ']';
  return out;
}

bool is_floating(DType dt) {
  return dt == DType::kFloat16 || dt == DType::kBFloat16 || dt == DType::kFloat32 ||
         dt == DType::kFloat64;
}

bool is_integer(DType dt) {
  return dt == DType::kInt32 || dt == DType::kInt64 || dt == DType::kUInt32;
}

DType promote_types(DType a, DType b) {
  info(a);  // rejects invalid enumerators before they take part in the lattice
  info(b);
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  const bool a_float = is_floating(a);
  const bool b_float = is_floating(b);
  // Any two distinct integer types (i32/u32, or either with i64) join at int64.
  if (!a_float && !b_float) return DType::kInt64;
  if (!a_float) return b;
  if (!b_float) return a;
  const auto width = [](DType dt) {
    return dt == DType::kFloat64 ? 2 : dt == DType::kFloat32 ? 1 : 0;
  };
  // Distinct floats of equal width are float16 and bfloat16, which join at float32.
  if (width(a) == width(b)) return DType::kFloat32;
  return width(a) > width(b) ? a : b;
}

DType promote_with_scalar(DType array_dtype, bool scalar_is_float) {
  info(array_dtype);
  if (scalar_is_float) return is_floating(array_dtype) ? array_dtype : DType::kFloat32;
  return array_dtype == DType::kBool ? DType::kInt32 : array_dtype;
}

int64_t shape_size(const Shape& shape) { return internal::checked_size(shape, "", "shape"); }

std::string shape_tuple_string(const Shape& shape) {
  std::string out = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  if (shape.size() == 1) out += ',';
  out += ')';
  return out;
}

}  // namespace spmd
