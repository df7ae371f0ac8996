// SPDX-License-Identifier: Apache-2.0
// File: spmd/format.h
//
// Printing spmd values. Array, Mesh, PartitionSpec, NamedSharding, Sharding, Device and DType each
// print their str() form (JAX's repr) with `std::ostream <<` and with fmt, where the format spec
// of a string applies (width, fill, alignment). The operator<< and the fmt::formatter of each
// type are declared beside it; this header holds what the formatters share. spmd links fmt
// publicly, so a program that includes <spmd/spmd.h> can call fmt::print directly.
//
// Example:
//   std::cout << spmd::make_mesh({4}, {"i"}) << '\n';         // Mesh('i': 4)
//   fmt::print("{} {:>9}\n", spmd::P("i"), spmd::float32);  // P('i',)   float32
#pragma once

// fmt/format.h, not fmt/core.h: fmt 9 defines formatter<string_view>::format there.
#include <fmt/format.h>

#include <string_view>

namespace spmd::internal {

// The fmt::formatter of a type T printed as value.str().
template <class T>
struct StrFormatter : fmt::formatter<std::string_view> {
  template <class FormatContext>
  auto format(const T& value, FormatContext& ctx) const {
    return fmt::formatter<std::string_view>::format(value.str(), ctx);
  }
};

}  // namespace spmd::internal
