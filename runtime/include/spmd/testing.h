// SPDX-License-Identifier: Apache-2.0
// File: spmd/testing.h
//
// Side-by-side checks for migrations: run one call through several paths (legacy pmap, the
// compat shim, a hand-written or migrated shard_map) and compare every output: shape, dtype and
// values, exactly or within a number of ulps. On a difference the report names the paths, the
// output, the first differing index and both values. No test framework is required; with
// GoogleTest:
//
//   auto r = spmd::testing::compare_pmap(f, "i", {.in_axes = {0, std::nullopt}}, x, w);
//   r.add("migrated shard_map", migrated(x, w));
//   EXPECT_TRUE(r.ok()) << r.report();
//
// compare_pmap needs both pmap implementations linked by name: spmd::pmap_legacy_impl and
// spmd::compat_impl.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <tuple>
#include <vector>

#include "spmd/array.h"
#include "spmd/pmap.h"

namespace spmd::testing {

struct CompareOptions {
  // Largest distance in units in the last place allowed between float elements; 0: exact (bit
  // patterns equal, except that NaNs match NaNs).
  int64_t max_ulps = 0;
};

// The outputs of several paths, compared with the first one.
class SideBySide {
 public:
  explicit SideBySide(CompareOptions options = {}) : options_(options) {}

  // Records one path's outputs (an Array, a tuple of Arrays or a vector of Arrays).
  SideBySide& add(const std::string& name, std::vector<Array> outputs);
  SideBySide& add(const std::string& name, const Array& output) {
    return add(name, std::vector<Array>{output});
  }
  template <class... Ts>
  SideBySide& add(const std::string& name, const std::tuple<Ts...>& outputs) {
    return add(name,
               std::apply([](const auto&... a) { return std::vector<Array>{a...}; }, outputs));
  }
  // Records that a path raised (paths agree when they raise the same kind and message).
  SideBySide& add_error(const std::string& name, std::exception_ptr error);

  // True when every path matches the first.
  bool ok() const { return report_.empty(); }
  // Empty when ok(); else one line per difference.
  const std::string& report() const { return report_; }
  // The outputs of the path with this index, in the order added; IndexError past the last path.
  const std::vector<Array>& outputs(size_t path) const;

 private:
  struct Path {
    std::string name;
    std::vector<Array> outputs;
    std::string error;  // "ValueError: ..." when the path raised
  };
  void compare_with_first(const Path& path);

  CompareOptions options_;
  std::vector<Path> paths_;
  std::string report_;
};

// "" when equal; else the first difference: "output 0: shape (4,) vs (2,)", or "output 1 at
// index (2, 3): 1.5 vs 1.5000001 (1 ulp)".
std::string compare_arrays(const Array& a, const Array& b, CompareOptions options = {});

// Runs pmap(f, axis_name, options)(args...) through the native legacy implementation and the
// compat shim and compares them; add more paths to the result with SideBySide::add.
template <class F, class... Args>
SideBySide compare_pmap(const F& f, const std::string& axis_name, const PmapOptions& options,
                        const Args&... args) {
  SideBySide result;
  auto run = [&](const char* name, auto make) {
    try {
      result.add(name, make(f, axis_name, options)(args...));
    } catch (...) {
      result.add_error(name, std::current_exception());
    }
  };
  run("legacy pmap",
      [](const F& g, const std::string& a, const PmapOptions& o) { return legacy::pmap(g, a, o); });
  run("compat pmap",
      [](const F& g, const std::string& a, const PmapOptions& o) { return compat::pmap(g, a, o); });
  return result;
}

}  // namespace spmd::testing
