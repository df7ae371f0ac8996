// SPDX-License-Identifier: Apache-2.0
// The OpenMPI reference for bench/collectives_bench: the same collectives at the same nccl-tests
// sizes, timed the same way (calibrated k, median of reps), one line per size:
//   <bytes> <median µs> <min µs>
// Run by collectives_bench under mpirun; usable by hand:
//   mpirun --oversubscribe -np 8 build/bench/mpi_collectives --op=psum --sizes=65536,1048576
#include <mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"

namespace {

using spmd::bench::flag;

// One call of `op` on S bytes per rank (nccl-tests conventions, like collectives_bench).
void run(const std::string& op, int64_t s, int n, int rank, std::vector<float>& in,
         std::vector<float>& out) {
  int count = static_cast<int>(s / 4);
  if (op == "psum") {
    MPI_Allreduce(in.data(), out.data(), count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (op == "all_gather") {
    MPI_Allgather(in.data(), count / n, MPI_FLOAT, out.data(), count / n, MPI_FLOAT,
                  MPI_COMM_WORLD);
  } else if (op == "psum_scatter") {
    MPI_Reduce_scatter_block(in.data(), out.data(), count / n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (op == "all_to_all") {
    MPI_Alltoall(in.data(), count / n, MPI_FLOAT, out.data(), count / n, MPI_FLOAT, MPI_COMM_WORLD);
  } else if (op == "ppermute") {
    MPI_Sendrecv(in.data(), count, MPI_FLOAT, (rank + 1) % n, 0, out.data(), count, MPI_FLOAT,
                 (rank + n - 1) % n, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
}

// Seconds per call of k calls, the maximum over ranks.
double timed(const std::string& op, int64_t s, int n, int rank, int64_t k, std::vector<float>& in,
             std::vector<float>& out) {
  MPI_Barrier(MPI_COMM_WORLD);
  double start = MPI_Wtime();
  for (int64_t i = 0; i < k; ++i) run(op, s, n, rank, in, out);
  double local = (MPI_Wtime() - start) / static_cast<double>(k), slowest = 0;
  MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int n = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::string op = flag(argc, argv, "op", "psum");
  int reps = std::stoi(flag(argc, argv, "reps", "7"));
  double target = std::stod(flag(argc, argv, "target-ms", "20")) / 1e3;
  for (const std::string& size : spmd::bench::split_list(flag(argc, argv, "sizes", "65536"))) {
    int64_t s = spmd::bench::parse_size(size);
    std::vector<float> in(s / 4 + n, 1.0f), out(s / 4 + n);
    run(op, s, n, rank, in, out);
    int64_t k = 1;
    while (k < (1 << 24) && timed(op, s, n, rank, k, in, out) * k < target) k *= 2;
    std::vector<double> t;
    for (int rep = 0; rep < reps; ++rep) t.push_back(timed(op, s, n, rank, k, in, out));
    if (rank == 0) {
      std::printf("%lld %.3f %.3f\n", static_cast<long long>(s), spmd::bench::median(t) * 1e6,
                  spmd::bench::minimum(t) * 1e6);
      std::fflush(stdout);
    }
  }
  MPI_Finalize();
  return 0;
}
