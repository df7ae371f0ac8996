// SPDX-License-Identifier: Apache-2.0
// libFuzzer target 2: meshes, PartitionSpecs and shard_map specs on small arrays. Fuzzed mesh
// shapes, axis names and device lists (unknown devices included), in/out specs (None, names,
// tuples, names the mesh lacks), ShardMapOptions (manual axes, check_vma, deadlines), one or two
// arguments of fuzzed rank and extents, bodies that change ranks or reduce over an axis; also
// device_put, NamedSharding's arithmetic, the debug pictures and both pmap paths with fuzzed
// in/out axes and devices. Every call must return a value or raise an spmd::Error.
#include "fuzz_input.h"
#include "spmd/debug.h"
#include "spmd/pmap.h"

namespace spmd::fuzz {
namespace {

Mesh mesh(FuzzedDataProvider& in) {
  Shape sizes(in.ConsumeIntegralInRange<int>(0, 3));
  for (int64_t& s : sizes) {
    s = in.ConsumeIntegralInRange<int>(0, 9) == 0 ? extent(in) : in.ConsumeIntegralInRange(1, 4);
  }
  std::vector<std::string> names;
  static const char* kNames[] = {"i", "j", "k"};
  for (size_t a = 0; a < sizes.size(); ++a) {
    names.push_back(in.ConsumeIntegralInRange<int>(0, 9) == 0 ? name(in) : kNames[a]);
  }
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0) names.push_back("extra");
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0: {
      std::vector<Device> devices(in.ConsumeIntegralInRange<int>(0, 8));
      for (Device& d : devices) d = device(in);
      return Mesh(devices, sizes, names);
    }
    case 1: {
      std::vector<Device> pool = devices();
      std::reverse(pool.begin(), pool.end());
      return make_mesh(sizes, names, pool);
    }
    default:
      return make_mesh(sizes, names);
  }
}

Array argument(FuzzedDataProvider& in) {
  Shape s(in.ConsumeIntegralInRange<int>(0, 3));
  for (int64_t& e : s) e = in.ConsumeIntegralInRange<int>(0, 4) == 0 ? 3 : 4;
  return arange(shape_size(s)).reshape(s).astype(dtype(in));
}

Specs specs(FuzzedDataProvider& in) {
  if (in.ConsumeBool()) return Specs(spec(in));
  std::vector<PartitionSpec> list(in.ConsumeIntegralInRange<int>(0, 3));
  for (PartitionSpec& s : list) s = spec(in);
  return Specs(list);
}

ShardMapOptions options(FuzzedDataProvider& in) {
  ShardMapOptions o;
  o.check_vma = in.ConsumeBool();
  const int manual = in.ConsumeIntegralInRange<int>(0, 2);
  for (int a = 0; a < manual; ++a) o.axis_names.insert(name(in));
  if (in.ConsumeBool()) {
    o.collective_timeout_s =
        in.PickValueInArray({5.0, 0.0, -1.0, std::numeric_limits<double>::quiet_NaN(), 1e300});
  }
  if (in.ConsumeIntegralInRange<int>(0, 7) == 0)
    o.donate_argnums = {in.ConsumeIntegralInRange(-1, 2)};
  return o;
}

// A body over the first manual axis name `axis`, chosen by `kind`.
Array body(const Array& b, int kind, const std::string& axis) {
  switch (kind) {
    case 0:
      return b;
    case 1:
      return b * 2;
    case 2:
      return psum(b, axis);
    case 3:
      return sum(b);  // rank 0: out_specs longer than rank fail
    case 4:
      return all_gather(b, axis, {.tiled = true});
    default:
      return expand_dims(b, 0);
  }
}

void run_shard_map(FuzzedDataProvider& in, const Mesh& m) {
  Specs in_specs = specs(in), out_specs = specs(in);
  ShardMapOptions o = options(in);
  const int kind = in.ConsumeIntegralInRange<int>(0, 5);
  const std::string axis = m.ndim() > 0 ? m.axis_names()[0] : "i";
  Array x = argument(in);
  if (in.ConsumeBool()) {
    shard_map([kind, axis](const Array& b) { return body(b, kind, axis); }, m, in_specs, out_specs,
              o)(x);
  } else {
    Array y = argument(in);
    auto two = [kind, axis](const Array& a, const Array& b, int) {
      return std::make_tuple(body(a, kind, axis), body(b, kind, axis));
    };
    shard_map(two, m, in_specs, out_specs, o)(x, y, 7);
  }
}

void run_layout(FuzzedDataProvider& in, const Mesh& m) {
  NamedSharding sharding(m, spec(in));
  Shape global = shape(in, 3);
  switch (in.ConsumeIntegralInRange<int>(0, 3)) {
    case 0:
      sharding.shard_shape(global);
      return;
    case 1:
      sharding.device_indices(global);
      return;
    case 2:
      visualize_array_sharding(device_put(argument(in), sharding));
      return;
    default:
      describe_mesh(m);
      sharding.str();
      return;
  }
}

void run_pmap(FuzzedDataProvider& in) {
  PmapOptions o;
  o.in_axes = {MapAxis(in.ConsumeBool() ? std::optional<int>(axis(in)) : std::nullopt)};
  o.out_axes = {MapAxis(in.ConsumeBool() ? std::optional<int>(axis(in)) : std::nullopt)};
  if (in.ConsumeBool()) {
    std::vector<Device> devices(in.ConsumeIntegralInRange<int>(0, 5));
    for (Device& d : devices) d = device(in);
    o.devices = devices;
  }
  if (in.ConsumeIntegralInRange<int>(0, 3) == 0) o.axis_size = in.ConsumeIntegralInRange(-1, 9);
  const std::string axis_name = in.ConsumeBool() ? "i" : "";
  Array x = argument(in);
  auto f = [](const Array& b) { return b + 1; };
  if (in.ConsumeBool()) {
    legacy::pmap(f, axis_name, o)(x);
  } else {
    compat::pmap(f, axis_name, o)(x);
  }
}

}  // namespace
}  // namespace spmd::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spmd::initialize({.cpu_devices = 8});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spmd::fuzz;
  FuzzedDataProvider in(data, size);
  const int what = in.ConsumeIntegralInRange<int>(0, 3);
  expect_spmd("sharding", [&] {
    if (what == 3) return run_pmap(in);
    spmd::Mesh m = mesh(in);
    if (what == 2) return run_layout(in, m);
    run_shard_map(in, m);
  });
  return 0;
}
