// SPDX-License-Identifier: Apache-2.0
// Collectives benchmark (method: docs/benchmarks.md).
//
// For each collective, device count N and size S it times a shard_map body that runs the
// collective k times, and in the same process, interleaved rep by rep, three references over the
// same devices: an empty barrier (the synchronisation floor), one memcpy of S bytes per device (the
// bandwidth floor), and a barrier then that memcpy (the floor of a collective that meets and moves
// S bytes per device: where devices outnumber cores, the plain memcpy runs k copies per time slice
// from cache, while anything that meets every op interleaves the devices' data on each core). For
// psum and psum_scatter a fourth, a plain reduce: after a barrier each device sums its 1/N of the
// elements of all N inputs into one result with a plain loop (reduce_share below): the arithmetic
// and memory traffic of an all-reduce with a shared result (N x S read, S written) without the
// collective itself. The primary results are the per-rep ratios to those references, and the
// spread of each series of reps (median over minimum) beside the references' spreads in the same
// reps; absolute times, algbw and busbw (nccl-tests' formulas) are informational. With OpenMPI
// installed it also runs the same collectives through MPI (bench/mpi_collectives.cc) in alternating
// rounds and reports spmd's speedup.
//
//   build/bench/collectives_bench                 full run (~7 min on 2 cores)
//   build/bench/collectives_bench --quick         smoke run (CI)
//   options: --devices=2,4,8 --sizes=1K,64K,1M --ops=psum,all_gather --reps=7 --mpi=auto|on|off
//            --mpi-sizes=64K,256K,1M,4M --rounds=2
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "collectives_internal.h"
#include "spmd/spmd.h"

namespace spmd::bench {
namespace {

struct Options {
  std::vector<int> devices{2, 4, 8};
  std::vector<int64_t> sizes;
  std::vector<std::string> ops{"psum", "all_gather", "psum_scatter", "ppermute", "all_to_all"};
  int reps = 7;
  double target_s = 0.02;
  std::string mpi = "auto";
  std::vector<int64_t> mpi_sizes;
  int rounds = 2;
};

// nccl-tests' bus bandwidth factor for each collective (docs/benchmarks.md).
double bus_factor(const std::string& op, int n) {
  if (op == "psum") return 2.0 * (n - 1) / n;
  if (op == "ppermute") return 1.0;
  return static_cast<double>(n - 1) / n;
}

// Input bytes per device for a collective whose nccl-tests size is S.
int64_t input_bytes(const std::string& op, int n, int64_t s) {
  return op == "all_gather" ? s / n : s;
}

// The ring ppermute sends over: device k to k + 1 (made once per body, like MPI's neighbours).
std::vector<std::pair<int, int>> ring_of(int n) {
  std::vector<std::pair<int, int>> ring;
  for (int k = 0; k < n; ++k) ring.emplace_back(k, (k + 1) % n);
  return ring;
}

Array run_op(const std::string& op, const Array& x, const std::vector<std::pair<int, int>>& ring) {
  if (op == "psum") return psum(x, "i");
  if (op == "all_gather") return all_gather(x, "i", {.tiled = true});
  if (op == "psum_scatter") return psum_scatter(x, "i", {.tiled = true});
  if (op == "all_to_all") return all_to_all(x, "i", 0, 0, {.tiled = true});
  if (op == "ppermute") return ppermute(x, "i", ring);
  throw std::invalid_argument("unknown op " + op);
}

// Checks one result block against the collective's definition, on inputs where device d holds
// d + 1 everywhere.
void check_result(const std::string& op, int n, const Array& block, int device) {
  std::vector<float> v = block.to_vector<float>();
  float expected = 0;
  if (op == "psum" || op == "psum_scatter") expected = n * (n + 1) / 2.0f;
  if (op == "ppermute") expected = static_cast<float>((device + n - 1) % n + 1);
  if (op == "all_gather" || op == "all_to_all") expected = 1;  // first element comes from device 0
  if (v.empty() || v.front() != expected) {
    throw std::runtime_error(fmt::format("{} on {} devices gave {} on device {}, expected {}", op,
                                         n, v.empty() ? NAN : v.front(), device, expected));
  }
}

// y[i] = x[0][i] + ... + x[K-1][i] in that order (`more`: y[i] + x[0][i] + ...), K inputs read
// in one pass while the sum stays in a register, as the runtime's reduction loop does (this file
// is built with -O3, as the CPU kernels are, so the loop vectorizes).
template <int K>
void fold(float* __restrict y, const float* const* x, int64_t begin, int64_t end, bool more) {
  for (int64_t i = begin; i < end; ++i) {
    float acc = more ? y[i] + x[0][i] : x[0][i];
    for (int q = 1; q < K; ++q) acc += x[q][i];
    y[i] = acc;
  }
}

template <int... K>
void fold_some(int k, float* y, const float* const* x, int64_t begin, int64_t end, bool more,
               std::integer_sequence<int, K...>) {
  ((k == K + 1 ? fold<K + 1>(y, x, begin, end, more) : void()), ...);
}

// The plain reduce reference: device d sums elements [d * chunk, (d + 1) * chunk) of every input,
// in rank order, into `out` (up to 8 inputs per pass): the arithmetic and memory traffic of an
// all-reduce with a shared result (N x S read, S written), written here by hand, without the
// collective's meeting, lending and bookkeeping.
void reduce_share(const std::vector<std::vector<char>>& in, std::vector<char>& out, int d,
                  int64_t bytes) {
  const auto n = static_cast<int64_t>(in.size());
  // Chunks of whole cache lines, as psum's owners take them.
  const int64_t count = bytes / 4, chunk = ((count + n - 1) / n + 15) / 16 * 16;
  const int64_t begin = std::min(count, d * chunk), end = std::min(count, begin + chunk);
  std::vector<const float*> inputs;
  for (const std::vector<char>& x : in) inputs.push_back(reinterpret_cast<const float*>(x.data()));
  for (int64_t q = 0; q < n; q += 8) {
    fold_some(static_cast<int>(std::min<int64_t>(8, n - q)), reinterpret_cast<float*>(out.data()),
              inputs.data() + q, begin, end, q > 0, std::make_integer_sequence<int, 8>{});
  }
}

// Median over minimum of a series of reps: how much the slower half of the reps lost to the
// fastest (the target for every collective is at most 1.2; docs/benchmarks.md).
double spread(const std::vector<double>& reps) { return median(reps) / minimum(reps); }

struct Result {
  double median_us, min_us, ratio_barrier, ratio_memcpy, ratio_synced;
  // spread() of the collective's reps, and of each reference's reps in the same process: how
  // much the machine itself moved while the collective was timed.
  double spread, spread_barrier, spread_memcpy, spread_synced;
  // Against the plain reduce (psum and psum_scatter only; NaN for the other ops).
  double ratio_reduce = NAN, spread_reduce = NAN;
};

// Whether `op` reduces, so that the plain reduce reference applies.
bool reduces(const std::string& op) { return op == "psum" || op == "psum_scatter"; }

class Bench {
 public:
  Bench(int n, const Options& options) : n_(n), options_(options), mesh_(make_mesh({n}, {"i"})) {}

  // Times `op` at nccl-tests size S, with both references interleaved rep by rep.
  Result measure(const std::string& op, int64_t s) {
    int64_t in_bytes = input_bytes(op, n_, s);
    int64_t count = std::max<int64_t>(n_, in_bytes / 4 / n_ * n_);  // divisible for scatter ops
    Array x = make_input(count);
    std::vector<std::vector<char>> src(n_, std::vector<char>(s)), dst(n_, std::vector<char>(s));

    auto body = [&](const std::string& what, int64_t k) {
      shard_map(
          [&, k](const Array& b) {
            int d = axis_index("i").item<int32_t>();
            if (what == "barrier") {
              for (int64_t i = 0; i < k; ++i) internal::barrier("i");
            } else if (what == "memcpy") {
              for (int64_t i = 0; i < k; ++i) std::memcpy(dst[d].data(), src[d].data(), s);
            } else if (what == "synced memcpy") {
              for (int64_t i = 0; i < k; ++i) {
                internal::barrier("i");
                std::memcpy(dst[d].data(), src[d].data(), s);
              }
            } else if (what == "plain reduce") {
              for (int64_t i = 0; i < k; ++i) {
                internal::barrier("i");
                reduce_share(src, dst[0], d, s);
              }
            } else {
              const std::vector<std::pair<int, int>> ring = ring_of(n_);
              Array y;
              for (int64_t i = 0; i < k; ++i) y = run_op(what, b, ring);
            }
          },
          mesh_, P("i"), std::vector<P>{}, {.check_vma = false})(x);
    };
    verify(op, x);
    std::map<std::string, int64_t> k;
    std::map<std::string, std::vector<double>> t;
    std::vector<std::string> order{"barrier", "memcpy", "synced memcpy"};
    if (reduces(op)) order.push_back("plain reduce");
    order.push_back(op);
    for (const std::string& what : order) {
      k[what] = calibrate([&](int64_t kk) { body(what, kk); }, options_.target_s);
    }
    std::map<std::string, std::vector<double>> ratio;  // per reference, per rep
    for (int rep = 0; rep < options_.reps; ++rep) {
      for (const std::string& what : order) {
        t[what].push_back(time_per_iteration([&](int64_t kk) { body(what, kk); }, k[what]));
      }
      for (size_t r = 0; r + 1 < order.size(); ++r) {
        ratio[order[r]].push_back(t[op].back() / t[order[r]].back());
      }
    }
    Result result{median(t[op]) * 1e6,
                  minimum(t[op]) * 1e6,
                  median(ratio["barrier"]),
                  median(ratio["memcpy"]),
                  median(ratio["synced memcpy"]),
                  spread(t[op]),
                  spread(t["barrier"]),
                  spread(t["memcpy"]),
                  spread(t["synced memcpy"])};
    if (reduces(op)) {
      result.ratio_reduce = median(ratio["plain reduce"]);
      result.spread_reduce = spread(t["plain reduce"]);
    }
    return result;
  }

 private:
  Array make_input(int64_t count) {
    // Device d's block is all d + 1, so results are easy to check.
    Array ids = arange(n_, DType::kFloat32) + 1.0f;
    return device_put(broadcast_to(ids.reshape({n_, 1}), {n_, count}).reshape({n_ * count}),
                      NamedSharding(mesh_, P("i")));
  }

  void verify(const std::string& op, const Array& x) {
    auto f = shard_map([&](const Array& b) { return run_op(op, b, ring_of(n_)); }, mesh_, P("i"),
                       P("i"), {.check_vma = false});
    std::vector<Shard> shards = f(x).addressable_shards();
    for (int d = 0; d < n_; ++d) check_result(op, n_, shards[d].data, d);
  }

  int n_;
  const Options& options_;
  Mesh mesh_;
};

// ---- OpenMPI comparison ----

std::string mpi_binary(const char* argv0) {
  std::filesystem::path self = std::filesystem::canonical("/proc/self/exe");
  std::filesystem::path mpi = self.parent_path() / "mpi_collectives";
  (void)argv0;
  return std::filesystem::exists(mpi) ? mpi.string() : "";
}

struct MpiTime {
  double median_us, min_us;
};

// Median and minimum µs per size from one mpirun of bench/mpi_collectives.
std::map<int64_t, MpiTime> run_mpi(const std::string& binary, const std::string& op, int n,
                                   const std::vector<int64_t>& sizes, const Options& options) {
  const std::string size_list = fmt::format("{}", fmt::join(sizes, ","));
  std::string cmd = fmt::format(
      "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=self,vader "
      "mpirun --oversubscribe -np {} {} --op={} --sizes={} --reps={} --target-ms={} 2>/dev/null",
      n, binary, op, size_list, options.reps, options.target_s * 1e3);
  std::map<int64_t, MpiTime> out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return out;
  char line[256];
  while (fgets(line, sizeof(line), pipe.get()) != nullptr) {
    long long size = 0;
    double med = 0, min = 0;
    if (std::sscanf(line, "%lld %lf %lf", &size, &med, &min) == 3) out[size] = {med, min};
  }
  return out;
}

void compare_with_mpi(const Options& options, const char* argv0) {
  std::string binary = mpi_binary(argv0);
  bool have_mpirun = std::system("command -v mpirun >/dev/null 2>&1") == 0;
  if (binary.empty() || !have_mpirun) {
    fmt::print("\nOpenMPI comparison skipped: {}\n",
               binary.empty() ? "bench/mpi_collectives was not built (no MPI found by CMake)"
                              : "mpirun is not on the PATH");
    if (options.mpi == "on") std::exit(1);
    return;
  }
  const int n = 8;
  fmt::print(
      "\nspmd vs OpenMPI, {} ranks/devices, {} alternating rounds (speedup = MPI time / "
      "spmd time, median over rounds)\n",
      n, options.rounds);
  fmt::print(
      "| op | size | spmd µs | MPI µs | speedup | spmd median / min | MPI median / min "
      "|\n|---|---|---|---|---|---|---|\n");
  Bench bench(n, options);
  for (const std::string& op : options.ops) {
    // Per size, one entry per round; the spreads printed are the worst round's.
    std::map<int64_t, std::vector<double>> speedups, ours, theirs, our_spread, their_spread;
    for (int round = 0; round < options.rounds; ++round) {
      std::map<int64_t, Result> spmd;
      for (int64_t s : options.mpi_sizes) spmd.emplace(s, bench.measure(op, s));
      std::map<int64_t, MpiTime> mpi = run_mpi(binary, op, n, options.mpi_sizes, options);
      for (int64_t s : options.mpi_sizes) {
        if (!mpi.count(s)) continue;
        ours[s].push_back(spmd.at(s).median_us);
        our_spread[s].push_back(spmd.at(s).spread);
        theirs[s].push_back(mpi[s].median_us);
        their_spread[s].push_back(mpi[s].median_us / mpi[s].min_us);
        speedups[s].push_back(mpi[s].median_us / spmd.at(s).median_us);
      }
    }
    for (int64_t s : options.mpi_sizes) {
      if (speedups[s].empty()) {
        fmt::print("| {} | {} | - | MPI run failed | - | - | - |\n", op, size_label(s));
        continue;
      }
      fmt::print("| {} | {} | {:.1f} | {:.1f} | {:.2f}x | {:.2f} | {:.2f} |\n", op, size_label(s),
                 median(ours[s]), median(theirs[s]), median(speedups[s]),
                 *std::max_element(our_spread[s].begin(), our_spread[s].end()),
                 *std::max_element(their_spread[s].begin(), their_spread[s].end()));
    }
  }
}

std::vector<int64_t> parse_sizes(const std::string& text) {
  std::vector<int64_t> out;
  for (const std::string& s : split_list(text)) out.push_back(parse_size(s));
  return out;
}

}  // namespace
}  // namespace spmd::bench

int main(int argc, char** argv) {
  using namespace spmd::bench;
  Options options;
  bool quick = flag(argc, argv, "quick", "") == "1";
  std::string default_sizes = quick ? "1K,64K,1M" : "1K,4K,16K,64K,256K,1M,4M,16M,64M";
  if (quick) {
    options.devices = {8};
    options.reps = 3;
    options.target_s = 0.005;
    options.rounds = 1;
  }
  options.sizes = parse_sizes(flag(argc, argv, "sizes", default_sizes));
  options.mpi_sizes = parse_sizes(flag(argc, argv, "mpi-sizes", quick ? "64K" : "64K,256K,1M,4M"));
  if (std::string d = flag(argc, argv, "devices", ""); !d.empty()) {
    options.devices.clear();
    for (const std::string& n : split_list(d)) options.devices.push_back(std::stoi(n));
  }
  if (std::string o = flag(argc, argv, "ops", ""); !o.empty()) options.ops = split_list(o);
  options.reps = std::stoi(flag(argc, argv, "reps", std::to_string(options.reps)));
  options.rounds = std::stoi(flag(argc, argv, "rounds", std::to_string(options.rounds)));
  options.mpi = flag(argc, argv, "mpi", quick ? "off" : "auto");

  int max_devices = *std::max_element(options.devices.begin(), options.devices.end());
  spmd::initialize({.cpu_devices = std::max(8, max_devices)});
  fmt::print(
      "spmd collectives benchmark: {} cores, float32, median of {} reps; ratios are per-rep "
      "time / reference time in the same process\n",
      sysconf(_SC_NPROCESSORS_ONLN), options.reps);
  for (int n : options.devices) {
    fmt::print("\n{} devices: barrier reference {} \n", n, "(empty collective)");
    fmt::print(
        "| op | size | median µs | min µs | median / min | references' median / min (barrier, "
        "memcpy, synced, plain reduce) | / barrier | / memcpy | / synced memcpy | / plain reduce "
        "| algbw GB/s | busbw GB/s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    Bench bench(n, options);
    for (const std::string& op : options.ops) {
      for (int64_t s : options.sizes) {
        Result r = bench.measure(op, s);
        double algbw = static_cast<double>(s) / (r.median_us * 1e-6) / 1e9;
        const bool plain = !std::isnan(r.ratio_reduce);
        fmt::print(
            "| {} | {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} / {:.2f} / {:.2f} / {} | {:.2f} | "
            "{:.2f} | {:.2f} | {} | {:.2f} | {:.2f} |\n",
            op, size_label(s), r.median_us, r.min_us, r.spread, r.spread_barrier, r.spread_memcpy,
            r.spread_synced, plain ? fmt::format("{:.2f}", r.spread_reduce) : "-", r.ratio_barrier,
            r.ratio_memcpy, r.ratio_synced, plain ? fmt::format("{:.2f}", r.ratio_reduce) : "-",
            algbw, algbw * bus_factor(op, n));
        std::fflush(stdout);
      }
    }
  }
  if (options.mpi != "off") compare_with_mpi(options, argv[0]);
  return 0;
}
