// SPDX-License-Identifier: Apache-2.0
// psum across processes against plain Gloo and MPI_Allreduce (docs/benchmarks.md, "Method"):
// float32 sum-all-reduce of S bytes per device or rank, for each size.
//   spmd-run -n 2 --devices-per-process 4 distributed_bench --impl=spmd   (2 processes x 4 devices)
//   spmd-run -n 8 distributed_bench --impl=gloo                           (8 ranks,
//   gloo::allreduce)
// The MPI reference is bench/mpi_collectives (--op=psum, 8 ranks under mpirun);
// bench/distributed_bench.sh runs all three and prints the ratios. Every process uses the same
// iteration count per size (k = 4 MiB / S, at least 4), so no process waits on another's
// calibration; process 0 prints "<bytes> <median µs> <min µs>" per size over --reps rounds.
#include <fmt/format.h>
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <spmd/spmd.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "distributed/tcp_store.h"

namespace {

using spmd::bench::Clock;
using spmd::bench::flag;
using spmd::bench::seconds;

int64_t iterations(int64_t bytes) { return std::max<int64_t>(4, (int64_t{4} << 20) / bytes); }

void print(int64_t bytes, const std::vector<double>& t) {
  fmt::print("{} {:.3f} {:.3f}\n", bytes, spmd::bench::median(t) * 1e6,
             spmd::bench::minimum(t) * 1e6);
  std::fflush(stdout);
}

int run_spmd(const std::vector<int64_t>& sizes, int reps) {
  spmd::distributed::initialize();
  spmd::Mesh mesh = spmd::make_mesh({spmd::device_count()}, {"i"});
  for (int64_t bytes : sizes) {
    const int64_t k = iterations(bytes);
    auto f = spmd::shard_map(
        [k](const spmd::Array& b) {
          spmd::Array y = b;
          for (int64_t i = 0; i < k; ++i) y = spmd::psum(b, "i");
          return y;
        },
        mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false});
    spmd::Array x = spmd::device_put(spmd::ones({spmd::device_count() * bytes / 4}, spmd::float32),
                                     spmd::NamedSharding(mesh, spmd::P("i")));
    f(x);  // warm-up: communicators, buffers
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      auto start = Clock::now();
      f(x);
      t.push_back(seconds(Clock::now() - start) / static_cast<double>(k));
    }
    if (spmd::process_index() == 0) print(bytes, t);
  }
  spmd::distributed::shutdown();
  return 0;
}

int run_gloo(const std::vector<int64_t>& sizes, int reps) {
  const int rank = std::atoi(std::getenv("SPMD_PROCESS_ID"));
  const int size = std::atoi(std::getenv("SPMD_NUM_PROCESSES"));
  const std::string address = std::getenv("SPMD_COORDINATOR");
  const size_t colon = address.rfind(':');
  const int port = std::atoi(address.substr(colon + 1).c_str());
  std::unique_ptr<spmd::internal::TcpStoreServer> server;
  // spmd-run hands process 0 the socket it listens on (the port is taken), as for spmd itself.
  const char* listening = std::getenv("SPMD_COORDINATOR_FD");
  if (rank == 0) {
    server = std::make_unique<spmd::internal::TcpStoreServer>(
        port, listening != nullptr ? std::atoi(listening) : -1);
  }
  spmd::internal::TcpStore store(address.substr(0, colon), port, std::chrono::seconds(60));
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto device = gloo::transport::tcp::CreateDevice(attr);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, size);
  gloo::rendezvous::PrefixStore prefixed("bench", store);
  context->connectFullMesh(prefixed, device);
  for (int64_t bytes : sizes) {
    const int64_t k = iterations(bytes);
    std::vector<float> in(bytes / 4, 1.0f), out(bytes / 4);
    auto allreduce = [&] {
      gloo::AllreduceOptions opts(context);
      opts.setInput(in.data(), in.size());
      opts.setOutput(out.data(), out.size());
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      gloo::allreduce(opts);
    };
    auto barrier = [&] {
      gloo::BarrierOptions opts(context);
      gloo::barrier(opts);
    };
    allreduce();
    std::vector<double> t;
    for (int r = 0; r < reps; ++r) {
      barrier();
      auto start = Clock::now();
      for (int64_t i = 0; i < k; ++i) allreduce();
      barrier();
      t.push_back(seconds(Clock::now() - start) / static_cast<double>(k));
    }
    if (rank == 0) print(bytes, t);
  }
  // Process 0 serves the store: everyone leaves together.
  std::vector<char> one{'1'};
  store.set(fmt::format("done/{}", rank), one);
  for (int p = 0; p < size; ++p) store.wait({fmt::format("done/{}", p)});
  context.reset();
  if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string impl = flag(argc, argv, "impl", "spmd");
  const int reps = std::stoi(flag(argc, argv, "reps", "5"));
  std::vector<int64_t> sizes;
  for (const std::string& s : spmd::bench::split_list(flag(argc, argv, "sizes", "4K,64K,1M,16M"))) {
    sizes.push_back(spmd::bench::parse_size(s));
  }
  if (impl == "spmd") return run_spmd(sizes, reps);
  if (impl == "gloo") return run_gloo(sizes, reps);
  fmt::print(stderr, "distributed_bench: --impl must be spmd or gloo, got '{}'\n", impl);
  return 2;
}
