// SPDX-License-Identifier: Apache-2.0
// spmd element types: float16/bfloat16 conversions, dtype names and JAX's promotion lattice.
#include "spmd/dtype.h"

#include <array>
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
    {"bool", "bool", 1},   {"int32", "i32", 4},     {"int64", "i64", 8},
    {"uint32", "u32", 4},  {"float16", "f16", 2},   {"bfloat16", "bf16", 2},
    {"float32", "f32", 4}, {"float64", "f64", 8},   {"int8", "i8", 1},
    {"int16", "i16", 2},   {"uint8", "u8", 1},      {"uint16", "u16", 2},
    {"uint64", "u64", 8},  {"complex64", "c64", 8}, {"complex128", "c128", 16},
};

// JAX's promotion lattice (dtype.h) as edges to the types each one promotes to directly. kNone
// marks the end of a list; float* (JAX's weak float, between the 64-bit integers and the floats)
// is the pseudo-node kWeakFloat.
constexpr int kNone = -1;
constexpr int kWeakFloat = static_cast<int>(std::size(kDTypeInfo));
constexpr int kNodes = kWeakFloat + 1;
constexpr int node(DType dt) { return static_cast<int>(dt); }
constexpr int kLattice[kNodes][3] = {
    /* bool */ {node(DType::kUInt8), node(DType::kInt8), kNone},
    /* int32 */ {node(DType::kInt64), kNone, kNone},
    /* int64 */ {kWeakFloat, kNone, kNone},
    /* uint32 */ {node(DType::kUInt64), node(DType::kInt64), kNone},
    /* float16 */ {node(DType::kFloat32), kNone, kNone},
    /* bfloat16 */ {node(DType::kFloat32), kNone, kNone},
    /* float32 */ {node(DType::kFloat64), node(DType::kComplex64), kNone},
    /* float64 */ {node(DType::kComplex128), kNone, kNone},
    /* int8 */ {node(DType::kInt16), kNone, kNone},
    /* int16 */ {node(DType::kInt32), kNone, kNone},
    /* uint8 */ {node(DType::kUInt16), node(DType::kInt16), kNone},
    /* uint16 */ {node(DType::kUInt32), node(DType::kInt32), kNone},
    /* uint64 */ {kWeakFloat, kNone, kNone},
    /* complex64 */ {node(DType::kComplex128), kNone, kNone},
    /* complex128 */ {kNone, kNone, kNone},
    /* float* */ {node(DType::kBFloat16), node(DType::kFloat16), kNone},
};

// Bit n of upper_bounds(a): a promotes to node n (itself included).
constexpr uint32_t upper_bounds(int a) {
  uint32_t bounds = uint32_t{1} << a;
  for (int next : kLattice[a]) {
    if (next != kNone) bounds |= upper_bounds(next);
  }
  return bounds;
}

// upper_bounds of every node, computed once at compile time (promotion runs in every binary op).
constexpr auto kUpperBounds = [] {
  std::array<uint32_t, kNodes> table{};
  for (int n = 0; n < kNodes; ++n) table[n] = upper_bounds(n);
  return table;
}();

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

bool is_complex(DType dt) { return dt == DType::kComplex64 || dt == DType::kComplex128; }

bool is_integer(DType dt) { return !is_floating(dt) && !is_complex(dt) && dt != DType::kBool; }

DType real_dtype(DType dt) {
  if (dt == DType::kComplex64) return DType::kFloat32;
  if (dt == DType::kComplex128) return DType::kFloat64;
  return dt;
}

DType promote_types(DType a, DType b) {
  info(a);  // rejects invalid enumerators before they take part in the lattice
  info(b);
  if (a == b) return a;  // every eager op on two arrays of one dtype asks
  // The least common upper bound: the one whose own upper bounds hold all the common ones.
  const uint32_t common = kUpperBounds[node(a)] & kUpperBounds[node(b)];
  for (int n = 0; n < kNodes; ++n) {
    if ((common >> n & 1) && (kUpperBounds[n] & common) == common) {
      return n == kWeakFloat ? DType::kFloat64 : static_cast<DType>(n);
    }
  }
  return DType::kComplex128;  // unreachable: complex128 bounds every type
}

DType promote_with_scalar(DType array_dtype, bool scalar_is_float) {
  info(array_dtype);
  if (scalar_is_float) {
    return is_floating(array_dtype) || is_complex(array_dtype) ? array_dtype : DType::kFloat32;
  }
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
