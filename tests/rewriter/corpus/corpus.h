// SPDX-License-Identifier: Apache-2.0
// Printing for the corpus programs: every value exactly (hexadecimal floats), so that "same
// output" means bit-identical results.
#pragma once

#include <fmt/core.h>
#include <spmd/spmd.h>

#include <string>
#include <tuple>
#include <vector>

namespace corpus {

inline void show(const std::string& label, const spmd::Array& a) {
  std::string shape;
  for (int64_t d : a.shape()) shape += (shape.empty() ? "" : ",") + std::to_string(d);
  fmt::print("{}: {}[{}]", label, spmd::dtype_name(a.dtype()), shape);
  for (double v : spmd::astype(a, spmd::DType::kFloat64).to_vector<double>()) fmt::print(" {:a}", v);
  fmt::print("\n");
}

inline void show(const std::string& label, const std::vector<spmd::Array>& arrays) {
  for (size_t i = 0; i < arrays.size(); ++i) show(label + "[" + std::to_string(i) + "]", arrays[i]);
}

template <class... Ts>
void show(const std::string& label, const std::tuple<Ts...>& t) {
  std::apply([&](const auto&... a) { show(label, std::vector<spmd::Array>{a...}); }, t);
}

// Runs one snippet, printing its error (class and message) the same way whichever implementation
// raised it.
template <class F>
void run(const char* name, F&& snippet) {
  fmt::print("== {}\n", name);
  try {
    snippet();
  } catch (const spmd::ValueError& e) {
    fmt::print("ValueError: {}\n", e.what());
  } catch (const spmd::TypeError& e) {
    fmt::print("TypeError: {}\n", e.what());
  } catch (const std::exception& e) {
    fmt::print("error: {}\n", e.what());
  }
}

}  // namespace corpus
