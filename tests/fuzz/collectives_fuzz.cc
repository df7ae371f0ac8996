// SPDX-License-Identifier: Apache-2.0
// libFuzzer target 3: collective parameters. A shard_map body over a fuzzed mesh of up to 8
// devices runs one to three collectives with fuzzed axes (repeated, unknown, out of mesh order),
// axis_index_groups, permutations, split/concat/gather/scatter axes, tiling, sources and casts, on
// blocks of fuzzed rank, extents and dtype. Every device runs the same program, except when the
// input asks one device to run a different collective or to skip one (the runtime must then say
// CollectiveMismatch or CollectiveTimeout, not hang). Every call must return a value or raise an
// spmd::Error.
#include "fuzz_input.h"

namespace spmd::fuzz {
namespace {

// What one collective does, decoded before the call so that every device runs the same one.
struct Collective {
  int kind = 0;
  std::vector<std::string> axes;
  AxisIndexGroups groups;
  std::vector<std::pair<int, int>> pairs;
  std::vector<int> perm;
  int a = 0, b = 0;  // axes / dimensions / source
  bool tiled = false;
  To to = To::kVarying;
};

Collective collective(FuzzedDataProvider& in, const Mesh& m) {
  Collective c;
  c.kind = in.ConsumeIntegralInRange<int>(0, 15);
  const int naxes = in.ConsumeIntegralInRange<int>(m.ndim() > 0 ? 1 : 0, 2);
  for (int k = 0; k < naxes; ++k) {
    c.axes.push_back(in.ConsumeIntegralInRange<int>(0, 7) == 0 || m.ndim() == 0
                         ? name(in)
                         : m.axis_names()[in.ConsumeIntegralInRange<int>(0, m.ndim() - 1)]);
  }
  if (in.ConsumeIntegralInRange<int>(0, 2) == 0) {
    c.groups.resize(in.ConsumeIntegralInRange<int>(1, 4));
    for (std::vector<int>& g : c.groups) {
      g.resize(in.ConsumeIntegralInRange<int>(0, 4));
      for (int& p : g) p = in.ConsumeIntegralInRange<int>(-1, 8);
    }
  }
  c.pairs.resize(in.ConsumeIntegralInRange<int>(0, 4));
  for (auto& [src, dst] : c.pairs) {
    src = in.ConsumeIntegralInRange<int>(-2, 9);
    dst = in.ConsumeIntegralInRange<int>(-2, 9);
  }
  c.perm.resize(in.ConsumeIntegralInRange<int>(0, 8));
  for (int& p : c.perm) p = in.ConsumeIntegralInRange<int>(-1, 8);
  c.a = axis(in);
  c.b = axis(in);
  c.tiled = in.ConsumeBool();
  c.to = static_cast<To>(in.ConsumeIntegralInRange<int>(0, 3));
  return c;
}

Array run(const Collective& c, const Array& x) {
  AxisNames axes(c.axes);
  switch (c.kind) {
    case 0:
      return psum(x, axes, {.axis_index_groups = c.groups});
    case 1:
      return pmean(x, axes, {.axis_index_groups = c.groups});
    case 2:
      return pmax(x, axes, {.axis_index_groups = c.groups});
    case 3:
      return pmin(x, axes);
    case 4:
      return pargmax(x, axes);
    case 5:
      return all_gather(x, axes,
                        {.axis = c.a, .tiled = c.tiled, .to = c.to, .axis_index_groups = c.groups});
    case 6:
      return psum_scatter(
          x, axes, {.scatter_dimension = c.a, .tiled = c.tiled, .axis_index_groups = c.groups});
    case 7:
      return all_to_all(x, axes, c.a, c.b, {.tiled = c.tiled, .axis_index_groups = c.groups});
    case 8:
      return pswapaxes(x, axes, c.a, {.tiled = c.tiled});
    case 9:
      return ppermute(x, axes, c.pairs);
    case 10:
      return pshuffle(x, axes, c.perm);
    case 11:
      return pbroadcast(x, axes, c.b);
    case 12:
      return x + axis_index(axes);
    case 13:
      return x * static_cast<int32_t>(axis_size(axes));
    case 14:
      return pcast(x, axes, c.to);
    default:
      return pargmin(x, axes);
  }
}

}  // namespace
}  // namespace spmd::fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  spmd::initialize({.cpu_devices = 8});
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spmd;
  using namespace spmd::fuzz;
  FuzzedDataProvider in(data, size);
  expect_spmd("collectives", [&] {
    static const Shape kMeshes[] = {{1}, {2}, {4}, {8}, {2, 2}, {2, 4}, {4, 2}, {2, 2, 2}, {1, 3}};
    const Shape sizes = in.PickValueInArray(kMeshes);
    std::vector<std::string> names{"i", "j", "k"};
    names.resize(sizes.size());
    Mesh m = make_mesh(sizes, names);
    std::vector<Collective> program(in.ConsumeIntegralInRange<int>(1, 3));
    for (Collective& c : program) c = collective(in, m);
    // -1: SPMD; else this mesh position runs the last collective differently, or skips it.
    const int odd = in.ConsumeIntegralInRange<int>(0, 3) == 0
                        ? in.ConsumeIntegralInRange<int>(0, static_cast<int>(m.size()) - 1)
                        : -1;
    const bool skip = in.ConsumeBool();
    Collective other = collective(in, m);
    Array x = small_array(in, 3);
    const bool split = x.ndim() > 0 && x.shape()[0] % m.axis_sizes()[0] == 0 && in.ConsumeBool();
    auto body = [&](const Array& b) {
      Array y = b;
      const int me = static_cast<int>(axis_index(AxisNames(m.axis_names())).item<int32_t>());
      for (size_t k = 0; k < program.size(); ++k) {
        const bool last = k + 1 == program.size();
        if (last && me == odd) {
          if (skip) return y;
          y = run(other, y);
        } else {
          y = run(program[k], y);
        }
      }
      return y;
    };
    shard_map(body, m, split ? P(m.axis_names()[0]) : P(), P(),
              {.check_vma = false, .collective_timeout_s = 2.0})(x);
  });
  return 0;
}
