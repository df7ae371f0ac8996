// SPDX-License-Identifier: Apache-2.0
// File: spmd/dtype.h
//
// Element types of spmd arrays and JAX's type-promotion rules.
//
// spmd follows JAX with x64 disabled for its defaults (`arange` gives int32, float literals give
// float32) but keeps 64-bit types as explicit dtypes, joined as JAX does with x64 enabled.
// Promotion follows JAX's lattice (a -> b: a promotes to b):
//
//   bool -> {uint8, int8};  uint8 -> {uint16, int16};  uint16 -> {uint32, int32};
//   uint32 -> {uint64, int64};  int8 -> int16 -> int32 -> int64;  {uint64, int64} -> float*;
//   float* -> {bfloat16, float16} -> float32 -> float64;  float32 -> complex64 -> complex128;
//   float64 -> complex128
//
// where the join of two types is the least type both promote to (uint8+int8 -> int16,
// uint32+int32 -> int64, bfloat16+float16 -> float32, float64+complex64 -> complex128), and float*
// (JAX's weak float) stands for float64: uint64+int64 -> float64. A Python-style "weak" scalar (a
// C++ literal in `x + 2`) takes the array's dtype unless the kinds differ (an int array plus 2.5
// gives float32); an integer literal wraps into the array's type as in JAX (a uint8 array plus 300
// adds 44).
//
// Every dtype also has JAX's name as a constant (spmd::float32 for jnp.float32), usable wherever
// a DType is. The 16-bit float element types are spmd::float16_t and spmd::bfloat16_t (the
// names of C++23's std::float16_t and std::bfloat16_t), since spmd::float16 names the dtype; the
// complex ones are std::complex<float> (complex64) and std::complex<double> (complex128).
//
// Example:
//   spmd::promote_types(spmd::int32, spmd::float16);    // DType::kFloat16
//   spmd::Array z = spmd::zeros({2, 3}, spmd::bfloat16);
//   spmd::float16_t h(1.5f);  float back = static_cast<float>(h);
//   fmt::print("{}\n", spmd::float32);                  // float32 (std::cout << works too)
#pragma once

#include <complex>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "spmd/format.h"

namespace spmd {

// (The enumerators' order is not meaningful: types added later come last.)
enum class DType {
  kBool,
  kInt32,
  kInt64,
  kUInt32,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  kInt8,
  kInt16,
  kUInt8,
  kUInt16,
  kUInt64,
  kComplex64,
  kComplex128,
};

// JAX's dtype names (jnp.float32, ...). bool_ is jnp.bool_ (bool is a C++ keyword).
inline constexpr DType bool_ = DType::kBool;
inline constexpr DType int32 = DType::kInt32;
inline constexpr DType int64 = DType::kInt64;
inline constexpr DType uint32 = DType::kUInt32;
inline constexpr DType int8 = DType::kInt8;
inline constexpr DType int16 = DType::kInt16;
inline constexpr DType uint8 = DType::kUInt8;
inline constexpr DType uint16 = DType::kUInt16;
inline constexpr DType uint64 = DType::kUInt64;
inline constexpr DType float16 = DType::kFloat16;
inline constexpr DType bfloat16 = DType::kBFloat16;
inline constexpr DType float32 = DType::kFloat32;
inline constexpr DType float64 = DType::kFloat64;
inline constexpr DType complex64 = DType::kComplex64;
inline constexpr DType complex128 = DType::kComplex128;

// Array shapes: one extent per dimension, row-major.
using Shape = std::vector<int64_t>;

// IEEE binary16, stored as its bit pattern. Conversions round to nearest even.
struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  explicit float16_t(float f);
  explicit operator float() const;
  static float16_t from_bits(uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
};

// bfloat16 (the top half of a float32), stored as its bit pattern. Conversions round to nearest
// even, as XLA does.
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  explicit bfloat16_t(float f);
  explicit operator float() const;
  static bfloat16_t from_bits(uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
};

// Bytes per element.
int64_t itemsize(DType dt);
// JAX's name: "bool", "int8", "int16", "int32", "int64", "uint8", ..., "bfloat16", "float32".
std::string_view dtype_name(DType dt);
// Prints dtype_name(dt).
std::ostream& operator<<(std::ostream& os, DType dt);
// JAX's short form used in shapes such as f32[4,2]: "bool", "i8", "i16", "i32", "i64", "u8",
// "u16", "u32", "u64", "f16", "bf16", "f32", "f64", "c64", "c128".
std::string_view dtype_short_name(DType dt);
// "f32[4,2]", the form JAX error messages use for an array type.
std::string type_string(DType dt, const Shape& shape);

bool is_floating(DType dt);  // the real floating types
bool is_complex(DType dt);   // complex64, complex128
bool is_integer(DType dt);   // the signed and unsigned integer types (not bool)
// The type of a complex type's parts (complex64 -> float32); other types are their own.
DType real_dtype(DType dt);

// The dtype of a binary operation between arrays of dtypes a and b.
DType promote_types(DType a, DType b);

// The dtype of `x op scalar` where the scalar is weakly typed: `scalar_is_float` tells whether the
// C++ literal was floating point.
DType promote_with_scalar(DType array_dtype, bool scalar_is_float);

// The C++ element type that stores each dtype, and the dtype of each C++ type.
template <class T>
struct dtype_of;
template <>
struct dtype_of<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct dtype_of<uint32_t> {
  static constexpr DType value = DType::kUInt32;
};
template <>
struct dtype_of<int8_t> {
  static constexpr DType value = DType::kInt8;
};
template <>
struct dtype_of<int16_t> {
  static constexpr DType value = DType::kInt16;
};
template <>
struct dtype_of<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct dtype_of<uint16_t> {
  static constexpr DType value = DType::kUInt16;
};
template <>
struct dtype_of<uint64_t> {
  static constexpr DType value = DType::kUInt64;
};
template <>
struct dtype_of<float16_t> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct dtype_of<bfloat16_t> {
  static constexpr DType value = DType::kBFloat16;
};
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct dtype_of<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct dtype_of<std::complex<float>> {
  static constexpr DType value = DType::kComplex64;
};
template <>
struct dtype_of<std::complex<double>> {
  static constexpr DType value = DType::kComplex128;
};
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

// Number of elements of a shape (1 for a scalar). ValueError for a negative extent or a count
// that does not fit in int64.
int64_t shape_size(const Shape& shape);
// "[4, 2]"-free compact form "4,2" used inside type strings; "(4, 2)" Python tuple form.
std::string shape_tuple_string(const Shape& shape);

}  // namespace spmd

template <>
struct fmt::formatter<spmd::DType> : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(spmd::DType dt, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(spmd::dtype_name(dt), ctx);
  }
};
