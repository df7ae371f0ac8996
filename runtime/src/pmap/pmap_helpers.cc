// SPDX-License-Identifier: Apache-2.0
// The parts of spmd/pmap.h that do not depend on the linked implementation: option checks made
// by pmap(...) itself, JAX's deprecated placement helpers, pvary, and warnings.
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "pmap/pmap_common.h"
#include "spmd/errors.h"
#include "spmd/ops.h"

namespace spmd {
namespace internal {
namespace {

std::mutex& warning_mutex() {
  static std::mutex mu;
  return mu;
}
WarningHandler& warning_handler() {
  static WarningHandler handler;
  return handler;
}

}  // namespace

void warn(const std::string& message) {
  WarningHandler handler;
  {
    std::lock_guard<std::mutex> lock(warning_mutex());
    handler = warning_handler();
  }
  if (handler) {
    handler(message);
  } else {
    std::fprintf(stderr, "spmd warning: %s\n", message.c_str());
  }
}

std::string unnamed_axis() {
  static std::atomic<int> next{0};
  return "_internal_pmap_axis_name_" + std::to_string(next++);
}

void check_pmap_options(const PmapPlan& plan) {
  const PmapOptions& o = plan.options;
  if (o.devices && o.devices->empty()) {
    throw ValueError("'devices' argument to pmap must be non-empty, or None.");
  }
  if (o.in_axes.empty() || o.out_axes.empty()) {
    throw TypeError(fmt::format(
        "pmap {} must be an int, None, or (nested) container with those types as leaves, but "
        "got []. Give one entry for all arguments (outputs), or one per argument (output).",
        o.in_axes.empty() ? "in_axes" : "out_axes"));
  }
  if (o.axis_size && *o.axis_size <= 0) {
    throw ValueError(fmt::format("pmap axis_size must be positive, got {}", *o.axis_size));
  }
}

}  // namespace internal

namespace {

Mesh placement_mesh(const std::vector<Device>& devices) {
  if (devices.empty()) throw ValueError("device_put_replicated/sharded need at least one device");
  return Mesh(devices, {static_cast<int64_t>(devices.size())}, {"x"});
}

}  // namespace

Array device_put_replicated(const Array& x, const std::vector<Device>& devices) {
  Mesh mesh = placement_mesh(devices);
  return device_put(stack(std::vector<Array>(devices.size(), x)), NamedSharding(mesh, P("x")));
}

Array device_put_sharded(const std::vector<Array>& xs, const std::vector<Device>& devices) {
  if (xs.size() != devices.size()) {
    throw ValueError(
        fmt::format("device_put_sharded got {} arrays for {} devices; give one array per device",
                    xs.size(), devices.size()));
  }
  return device_put(stack(xs), NamedSharding(placement_mesh(devices), P("x")));
}

Array pvary(const Array& x, AxisNames axes) { return pcast(x, std::move(axes), To::kVarying); }

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(internal::warning_mutex());
  std::swap(handler, internal::warning_handler());
  return handler;
}

}  // namespace spmd
