// SPDX-License-Identifier: Apache-2.0
// Side-by-side comparison of outputs (spmd/testing.h).
#include "spmd/testing.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <typeinfo>

#include "spmd/errors.h"
#include "spmd/ops.h"

namespace spmd::testing {
namespace {

// The index of flat position `flat` in an array of `shape`, as "(2, 3)".
std::string index_string(const Shape& shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    index[d] = shape[d] == 0 ? 0 : flat % shape[d];
    flat = shape[d] == 0 ? 0 : flat / shape[d];
  }
  return shape_tuple_string(index);
}

// Maps a float's bits onto a line where adjacent floats are adjacent integers.
int64_t ordered(uint64_t bits, int width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  int64_t magnitude = static_cast<int64_t>(bits & (sign - 1));
  return (bits & sign) ? -magnitude : magnitude;
}

// Bit patterns of a float array, widened to 64 bits, and the element width in bits.
std::vector<uint64_t> float_bits(const Array& a, int& width) {
  width = static_cast<int>(itemsize(a.dtype()) * 8);
  std::vector<uint64_t> out(a.size());
  if (width == 64) {
    std::vector<double> v = a.to_vector<double>();
    std::memcpy(out.data(), v.data(), v.size() * 8);
  } else if (width == 32) {
    std::vector<float> v = a.to_vector<float>();
    for (size_t i = 0; i < v.size(); ++i) {
      uint32_t b;
      std::memcpy(&b, &v[i], 4);
      out[i] = b;
    }
  } else {
    if (a.dtype() == DType::kFloat16) {
      std::vector<float16_t> h = a.to_vector<float16_t>();
      for (size_t i = 0; i < h.size(); ++i) out[i] = h[i].bits;
    } else {
      std::vector<bfloat16_t> h = a.to_vector<bfloat16_t>();
      for (size_t i = 0; i < h.size(); ++i) out[i] = h[i].bits;
    }
  }
  return out;
}

bool is_nan(uint64_t bits, int width) {
  const int mantissa = width == 64 ? 52 : width == 32 ? 23 : 10;
  const int exponent = width - 1 - mantissa;
  const uint64_t exp_mask = ((uint64_t{1} << exponent) - 1) << mantissa;
  return (bits & exp_mask) == exp_mask && (bits & ((uint64_t{1} << mantissa) - 1)) != 0;
}

std::string compare_floats(const Array& a, const Array& b, const CompareOptions& options) {
  int width = 0;
  std::vector<uint64_t> x = float_bits(a, width), y = float_bits(b, width);
  std::vector<double> xv = a.to_vector<double>(), yv = b.to_vector<double>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == y[i] || (is_nan(x[i], width) && is_nan(y[i], width))) continue;
    int64_t ulps = std::abs(ordered(x[i], width) - ordered(y[i], width));
    bool nan = is_nan(x[i], width) || is_nan(y[i], width);
    if (!nan && ulps <= options.max_ulps) continue;
    return fmt::format("at index {}: {} vs {} ({} ulp{}, bits {:#x} vs {:#x})",
                       index_string(a.shape(), static_cast<int64_t>(i)), xv[i], yv[i],
                       nan ? "nan" : std::to_string(ulps), ulps == 1 ? "" : "s", x[i], y[i]);
  }
  return "";
}

std::string compare_exact(const Array& a, const Array& b) {
  std::vector<int64_t> x = a.to_vector<int64_t>(), y = b.to_vector<int64_t>();
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] != y[i]) {
      return fmt::format("at index {}: {} vs {}", index_string(a.shape(), static_cast<int64_t>(i)),
                         x[i], y[i]);
    }
  }
  return "";
}

std::string error_text(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return fmt::format("raised {}: {}", typeid(e).name(), e.what());
  } catch (...) {
    return "raised a non-std::exception";
  }
}

}  // namespace

std::string compare_arrays(const Array& a, const Array& b, CompareOptions options) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) {
    return fmt::format("type {} vs {}", type_string(a.dtype(), a.shape()),
                       type_string(b.dtype(), b.shape()));
  }
  if (is_complex(a.dtype())) {
    std::string difference = compare_floats(real(a), real(b), options);
    if (!difference.empty()) return "real part " + difference;
    difference = compare_floats(imag(a), imag(b), options);
    return difference.empty() ? "" : "imaginary part " + difference;
  }
  return is_floating(a.dtype()) ? compare_floats(a, b, options) : compare_exact(a, b);
}

SideBySide& SideBySide::add(const std::string& name, std::vector<Array> outputs) {
  paths_.push_back(Path{name, std::move(outputs), ""});
  if (paths_.size() > 1) compare_with_first(paths_.back());
  return *this;
}

SideBySide& SideBySide::add_error(const std::string& name, std::exception_ptr error) {
  paths_.push_back(Path{name, {}, error_text(error)});
  if (paths_.size() > 1) compare_with_first(paths_.back());
  return *this;
}

const std::vector<Array>& SideBySide::outputs(size_t path) const {
  if (path >= paths_.size()) {
    throw IndexError(fmt::format("SideBySide::outputs: path {} is out of range for {} paths", path,
                                 paths_.size()));
  }
  return paths_[path].outputs;
}

void SideBySide::compare_with_first(const Path& path) {
  const Path& first = paths_.front();
  auto differ = [&](const std::string& what) {
    report_ += fmt::format("{} vs {}: {}\n", first.name, path.name, what);
  };
  if (!first.error.empty() || !path.error.empty()) {
    if (first.error != path.error) {
      differ(fmt::format("{} / {}", first.error.empty() ? "returned" : first.error,
                         path.error.empty() ? "returned" : path.error));
    }
    return;
  }
  if (first.outputs.size() != path.outputs.size()) {
    differ(fmt::format("{} outputs vs {}", first.outputs.size(), path.outputs.size()));
    return;
  }
  for (size_t o = 0; o < path.outputs.size(); ++o) {
    std::string d = compare_arrays(first.outputs[o], path.outputs[o], options_);
    if (!d.empty()) differ(fmt::format("output {} {}", o, d));
  }
}

}  // namespace spmd::testing
