// SPDX-License-Identifier: Apache-2.0
// Every collective over a global mesh of 8 devices, its results written by a single-process run
// (`collectives_check write DIR`) and checked bit for bit by a multi-process run of the same
// program under spmd-run (`collectives_check check DIR`): each process compares the shards it
// holds with the same region of the single-process result. Axes inside one process, across
// processes and both, over every reduction dtype and sizes on both sides of the CPU backend's
// algorithm switches; and global arrays built by make_array_from_process_local_data and
// make_array_from_callback from what each process has; and both pmap paths, each process passing
// its own devices' slices.
#include <fmt/format.h>
#include <spmd/distributed.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "array_impl.h"

namespace {

using spmd::Array;
using spmd::Mesh;
using spmd::P;

// Values whose sums round differently in every order: normal samples over 12 binary orders of
// magnitude.
Array data(int64_t n, spmd::DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> normal;
  std::uniform_int_distribution<int> scale(-6, 6);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v) x = std::ldexp(normal(gen), scale(gen));
  if (dtype == spmd::int32) {
    for (double& x : v) x = std::floor(x * 1000);
  }
  return spmd::Array::from_vector<double>(v).astype(dtype);
}

struct Case {
  std::string name;
  std::function<Array()> run;
};

// shard_map over `mesh` with x split along dimension 0 over every axis and each device's result
// concatenated the same way, so that every device's output is checked. `timeout_s`: the call's
// collective timeout, when not the run's.
Array per_device(const Mesh& mesh, const std::function<Array(const Array&)>& body, const Array& x,
                 std::optional<double> timeout_s = std::nullopt) {
  spmd::PartitionSpec all(
      std::vector<spmd::PartitionSpec::Entry>{spmd::PartitionSpec::Entry(mesh.axis_names())});
  auto f = spmd::shard_map(
      [&](const Array& b) { return body(b); }, mesh, all, all,
      {.check_vma = false, .name = "collectives_check", .collective_timeout_s = timeout_s});
  return f(x);
}

// The rows of `full` that this process's devices hold under `sharding` (dimension 0 split, the
// others whole): what a data loader of this process would produce.
Array local_rows(const Array& full, const spmd::NamedSharding& sharding) {
  int64_t lo = full.shape()[0], hi = 0;
  for (const spmd::Shard& s : spmd::device_put(full, sharding).addressable_shards()) {
    lo = std::min(lo, s.index[0].first);
    hi = std::max(hi, s.index[0].second);
  }
  spmd::Index rows = spmd::internal::full_index(full.shape());
  rows[0] = {lo, hi};
  return spmd::internal::read_region(full, rows, spmd::internal::default_device());
}

// Global arrays built from what each process has (make_array.h), checked as they are and after
// collectives over axes that cross processes.
void add_make_array_cases(std::vector<Case>& out, const Mesh& grid, const Mesh& cols) {
  const int n = spmd::device_count();
  const spmd::NamedSharding rows(grid, P(spmd::PartitionSpec::Entry({"p", "l"})));
  const spmd::NamedSharding row_pairs(cols, P("a", spmd::None));  // replicated over b
  out.push_back({"local_data_rows", [=] {
                   const Array full = data(6 * n, spmd::float32, 16).reshape({n * 2, 3});
                   return spmd::make_array_from_process_local_data(rows, local_rows(full, rows));
                 }});
  out.push_back({"local_data_row_pairs_psum_b", [=] {
                   const Array full = data(8 * n, spmd::int32, 17).reshape({n, 8});
                   Array x = spmd::make_array_from_process_local_data(
                       row_pairs, local_rows(full, row_pairs), spmd::Shape{n, 8});
                   return per_device(
                       cols, [](const Array& b) { return spmd::psum(b, "b"); }, x);
                 }});
  out.push_back({"callback_row_pairs", [=] {
                   const Array full = data(4 * n, spmd::float64, 18).reshape({n, 4});
                   return spmd::make_array_from_callback(
                       full.shape(), row_pairs, [&](const spmd::Index& index) {
                         return spmd::internal::read_region(full, index,
                                                            spmd::internal::default_device());
                       });
                 }});
}

// Both pmap paths (legacy and the compat shim) with each process passing its own devices' slices,
// as legacy JAX's multi-process pmap did; each process's part of the result is made global again
// (host_local_array_to_global_array) so that every shard is checked against one process over 8
// devices. `pmap(f, options)` is spmd::legacy::pmap or spmd::compat::pmap over axis "i".
template <class Pmap>
void add_pmap_cases(std::vector<Case>& out, const Mesh& flat, const std::string& path, Pmap pmap) {
  const int n = spmd::device_count();
  // This process's slices of `full` along `axis` (all of it in one process).
  auto mine = [flat](const Array& full, int axis) {
    spmd::PartitionSpec spec = spmd::internal::axis_spec(axis, "i");
    return spmd::global_array_to_host_local_array(
        spmd::device_put(full, spmd::NamedSharding(flat, spec)), flat, spec);
  };
  auto global = [flat](const Array& local, std::optional<int> axis) {
    return spmd::host_local_array_to_global_array(local, flat,
                                                  spmd::internal::axis_spec(axis, "i"));
  };
  out.push_back({fmt::format("pmap_{}_psum_axis_index", path), [=] {
                   const Array x = data(5 * n, spmd::float32, 20).reshape({n, 5});
                   auto f = pmap(
                       [](const Array& b) {
                         Array i = spmd::axis_index("i").astype(spmd::float32);
                         return b * i - spmd::psum(b, "i");
                       },
                       spmd::PmapOptions{});
                   return global(f(mine(x, 0)), 0);
                 }});
  out.push_back({fmt::format("pmap_{}_in1_out1_ppermute", path), [=] {
                   const Array x = data(3 * n, spmd::float64, 21).reshape({3, n});
                   std::vector<std::pair<int, int>> perm;
                   for (int k = 0; k < n; ++k) perm.push_back({k, (k + 3) % n});
                   auto f = pmap([perm](const Array& b) { return spmd::ppermute(b, "i", perm); },
                                 spmd::PmapOptions{.in_axes = {1}, .out_axes = {1}});
                   return global(f(mine(x, 1)), 1);
                 }});
  out.push_back({fmt::format("pmap_{}_broadcast_all_gather", path), [=] {
                   const Array x = data(2 * n, spmd::int32, 22).reshape({n, 2});
                   const Array w = data(2, spmd::int32, 23);
                   auto f = pmap(
                       [](const Array& b, const Array& v) { return spmd::all_gather(b * v, "i"); },
                       spmd::PmapOptions{.in_axes = {0, std::nullopt}});
                   return global(f(mine(x, 0), w), 0);
                 }});
  out.push_back({fmt::format("pmap_{}_unmapped_pmean", path), [=] {
                   const Array x = data(7 * n, spmd::bfloat16, 24).reshape({n, 7});
                   auto f = pmap([](const Array& b) { return spmd::pmean(b, "i"); },
                                 spmd::PmapOptions{.out_axes = {std::nullopt}});
                   return global(f(mine(x, 0)), std::nullopt);
                 }});
}

std::vector<Case> cases() {
  const int n = spmd::device_count();
  Mesh flat = spmd::make_mesh({n}, {"i"});
  Mesh grid = spmd::make_mesh({2, n / 2}, {"p", "l"});  // p across processes, l mostly within
  Mesh cols = spmd::make_mesh({n / 2, 2}, {"a", "b"});  // b within a process, a across
  std::vector<Case> out;
  const std::vector<std::pair<std::string, spmd::DType>> dtypes = {{"f32", spmd::float32},
                                                                   {"f64", spmd::float64},
                                                                   {"bf16", spmd::bfloat16},
                                                                   {"f16", spmd::float16},
                                                                   {"i32", spmd::int32}};
  for (const auto& [dname, dtype] : dtypes) {
    for (int64_t per : {int64_t{3}, int64_t{1000}, int64_t{70000}}) {
      const spmd::DType dt = dtype;
      out.push_back({fmt::format("psum_{}_{}_flat", dname, per), [=] {
                       return per_device(
                           flat, [](const Array& b) { return spmd::psum(b, "i"); },
                           data(per * n, dt, 1));
                     }});
    }
    const spmd::DType dt = dtype;
    out.push_back({fmt::format("psum_{}_grid_p", dname), [=] {
                     return per_device(
                         grid, [](const Array& b) { return spmd::psum(b, "p"); },
                         data(500 * n, dt, 2));
                   }});
    out.push_back({fmt::format("psum_{}_grid_l", dname), [=] {
                     return per_device(
                         grid, [](const Array& b) { return spmd::psum(b, "l"); },
                         data(500 * n, dt, 3));
                   }});
    out.push_back({fmt::format("psum_{}_grid_lp", dname), [=] {
                     return per_device(
                         grid,
                         [](const Array& b) {
                           return spmd::psum(b, {"l", "p"});
                         },
                         data(500 * n, dt, 4));
                   }});
  }
  // Shared results (a process's members but the first are lent the first's output) under later
  // per-device ops: each device scales what it was lent, and no device sees another's.
  for (int64_t per : {int64_t{1000}, int64_t{70000}}) {
    out.push_back({fmt::format("psum_lent_then_scaled_{}", per), [=] {
                     return per_device(
                         flat,
                         [](const Array& b) {
                           Array y = spmd::psum(b, "i");
                           return y * (spmd::axis_index("i") + 1).astype(spmd::float32) + y;
                         },
                         data(per * n, spmd::float32, 20));
                   }});
  }
  out.push_back({"all_gather_lent_then_scaled", [=] {
                   return per_device(
                       flat,
                       [](const Array& b) {
                         Array y = spmd::all_gather(b, "i", {.tiled = true});
                         return y * (spmd::axis_index("i") + 1).astype(spmd::float32);
                       },
                       data(3000 * n, spmd::float32, 21));
                 }});
  out.push_back({"pmax_cols_a", [=] {
                   return per_device(
                       cols, [](const Array& b) { return spmd::pmax(b, "a"); },
                       data(64 * n, spmd::float32, 5));
                 }});
  out.push_back({"pmin_cols_ab", [=] {
                   return per_device(
                       cols,
                       [](const Array& b) {
                         return spmd::pmin(b, {"a", "b"});
                       },
                       data(64 * n, spmd::float32, 6));
                 }});
  out.push_back({"pmean_flat", [=] {
                   return per_device(
                       flat, [](const Array& b) { return spmd::pmean(b, "i"); },
                       data(100 * n, spmd::float32, 7));
                 }});
  out.push_back({"all_gather_flat_tiled", [=] {
                   return per_device(
                       flat,
                       [](const Array& b) { return spmd::all_gather(b, "i", {.tiled = true}); },
                       data(10 * n, spmd::float32, 8));
                 }});
  out.push_back({"all_gather_grid_p", [=] {
                   return per_device(
                       grid,
                       [](const Array& b) {
                         return spmd::all_gather(b.reshape({1, -1}), "p").reshape({-1});
                       },
                       data(12 * n, spmd::int32, 9));
                 }});
  out.push_back({"psum_scatter_flat", [=] {
                   return per_device(
                       flat,
                       [](const Array& b) { return spmd::psum_scatter(b, "i", {.tiled = true}); },
                       data(16 * n * n, spmd::float32, 10));
                 }});
  out.push_back({"psum_scatter_cols_a", [=] {
                   return per_device(
                       cols,
                       [](const Array& b) { return spmd::psum_scatter(b, "a", {.tiled = true}); },
                       data(8 * n * n, spmd::bfloat16, 11));
                 }});
  out.push_back(
      {"all_to_all_flat", [=] {
         return per_device(
             flat, [](const Array& b) { return spmd::all_to_all(b, "i", 0, 0, {.tiled = true}); },
             data(4 * n * n, spmd::float32, 12));
       }});
  // Inputs that travel with the header (up to 16 KiB per process) and inputs that do not.
  for (int64_t per : {int64_t{50}, int64_t{3000}}) {
    out.push_back({fmt::format("ppermute_flat_shift_{}", per), [=] {
                     std::vector<std::pair<int, int>> perm;
                     for (int k = 0; k < n; ++k) perm.push_back({k, (k + 1) % n});
                     return per_device(
                         flat, [perm](const Array& b) { return spmd::ppermute(b, "i", perm); },
                         data(per * n, spmd::float64, 13));
                   }});
  }
  // Inputs too large for the envelopes go only where they are needed (routed): a reversal, a
  // partial permutation (devices nobody sends to get zeros), and all_to_all.
  out.push_back({"ppermute_flat_reverse_3000", [=] {
                   std::vector<std::pair<int, int>> perm;
                   for (int k = 0; k < n; ++k) perm.push_back({k, n - 1 - k});
                   return per_device(
                       flat, [perm](const Array& b) { return spmd::ppermute(b, "i", perm); },
                       data(3000 * n, spmd::float32, 21));
                 }});
  out.push_back({"ppermute_flat_partial_3000", [=] {
                   std::vector<std::pair<int, int>> perm = {{0, n - 1}, {n - 1, 0}, {1, 2}};
                   return per_device(
                       flat, [perm](const Array& b) { return spmd::ppermute(b, "i", perm); },
                       data(3000 * n, spmd::int32, 22));
                 }});
  out.push_back(
      {"all_to_all_flat_routed", [=] {
         return per_device(
             flat, [](const Array& b) { return spmd::all_to_all(b, "i", 0, 0, {.tiled = true}); },
             data(1024 * n * n, spmd::float32, 23));
       }});
  out.push_back({"psum_scatter_flat_routed", [=] {
                   return per_device(
                       flat,
                       [](const Array& b) { return spmd::psum_scatter(b, "i", {.tiled = true}); },
                       data(512 * n * n, spmd::float32, 24));
                 }});
  out.push_back({"psum_scatter_cols_a_routed", [=] {
                   return per_device(
                       cols,
                       [](const Array& b) { return spmd::psum_scatter(b, "a", {.tiled = true}); },
                       data(4096 * n * n, spmd::bfloat16, 25));
                 }});
  out.push_back({"ppermute_grid_p_partial", [=] {
                   return per_device(
                       grid,
                       [](const Array& b) {
                         return spmd::ppermute(b, "p", {{0, 1}});
                       },
                       data(20 * n, spmd::float32, 14));
                 }});
  // A call whose timeout is not the one the communicator's blocking connections were made with
  // takes Gloo's asynchronous operations instead: the same bits.
  for (int64_t per : {int64_t{3}, int64_t{70000}}) {
    out.push_back({fmt::format("psum_f32_{}_flat_other_timeout", per), [=] {
                     return per_device(
                         flat, [](const Array& b) { return spmd::psum(b, "i"); },
                         data(per * n, spmd::float32, 26), 123.0);
                   }});
  }
  out.push_back({"ppermute_flat_reverse_3000_other_timeout", [=] {
                   std::vector<std::pair<int, int>> perm;
                   for (int k = 0; k < n; ++k) perm.push_back({k, n - 1 - k});
                   return per_device(
                       flat, [perm](const Array& b) { return spmd::ppermute(b, "i", perm); },
                       data(3000 * n, spmd::float32, 27), 123.0);
                 }});
  out.push_back({"axis_index_psum_mixed", [=] {
                   return per_device(
                       grid,
                       [](const Array& b) {
                         Array i = spmd::axis_index({"p", "l"}).astype(spmd::float32);
                         return spmd::psum(b * i, "p") + spmd::psum(b, "l");
                       },
                       data(30 * n, spmd::float32, 15));
                 }});
  add_make_array_cases(out, grid, cols);
  add_pmap_cases(out, flat, "legacy", [](auto f, spmd::PmapOptions options) {
    return spmd::legacy::pmap(std::move(f), "i", std::move(options));
  });
  add_pmap_cases(out, flat, "compat", [](auto f, spmd::PmapOptions options) {
    return spmd::compat::pmap(std::move(f), "i", std::move(options));
  });
  return out;
}

// Compares every shard this process holds with the same region of `expected`; "" when equal.
std::string compare(const Array& got, const Array& expected) {
  if (got.dtype() != expected.dtype() || got.shape() != expected.shape()) {
    return fmt::format("type {} {} but the reference is {} {}", got.dtype(),
                       spmd::shape_tuple_string(got.shape()), expected.dtype(),
                       spmd::shape_tuple_string(expected.shape()));
  }
  for (const spmd::Shard& s : got.addressable_shards()) {
    Array want = spmd::internal::read_region(expected, s.index, s.device);
    spmd::internal::ConstView a = spmd::internal::const_view(s.data);
    spmd::internal::ConstView b = spmd::internal::const_view(want);
    const size_t bytes = static_cast<size_t>(s.data.size()) * spmd::itemsize(got.dtype());
    if (std::memcmp(a.data, b.data, bytes) != 0) {
      return fmt::format("the shard on {} differs from the single-process result", s.device);
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "write") != 0 && std::strcmp(argv[1], "check") != 0)) {
    fmt::print(stderr, "usage: collectives_check write|check DIR\n");
    return 2;
  }
  const bool write = std::strcmp(argv[1], "write") == 0;
  const std::string dir = argv[2];
  if (!write) spmd::distributed::initialize();
  if (spmd::device_count() != 8) {
    fmt::print(stderr, "collectives_check needs 8 devices in all, got {}\n", spmd::device_count());
    return 2;
  }
  int failures = 0, checked = 0;
  for (const Case& c : cases()) {
    Array result = c.run();
    const std::string path = fmt::format("{}/{}.npy", dir, c.name);
    if (write) {
      spmd::save(path, result);
      continue;
    }
    std::string problem = compare(result, spmd::load(path));
    ++checked;
    if (!problem.empty()) {
      ++failures;
      fmt::print("MISMATCH {}: {}\n", c.name, problem);
    }
  }
  if (!write) {
    fmt::print("process {} of {}: {} cases, {} bit-identical to one process, {} differ\n",
               spmd::process_index(), spmd::process_count(), checked, checked - failures, failures);
    spmd::distributed::shutdown();
  }
  return failures == 0 ? 0 : 1;
}
