// SPDX-License-Identifier: Apache-2.0
// Multi-process SPMD on one machine: two processes with four CPU devices each form one mesh of
// eight devices. Run it with the launcher:
//
//   build/bin/spmd-run -n 2 --devices-per-process 4 build/examples/multi_process/multi_process
//
// or under mpirun (`mpirun -np 2 -x SPMD_CPU_DEVICES=4 ...`), srun or torchrun: initialize()
// reads their environment. Every process runs this same program; each runs the bodies of its own
// devices, and collectives over axes that span processes go over Gloo. Process 0 prints.
#include <spmd/spmd.h>

int main() {
  spmd::distributed::initialize();
  const bool printer = spmd::process_index() == 0;
  if (printer) {
    fmt::print("{} processes, {} devices in all, {} here: {}\n", spmd::process_count(),
               spmd::device_count(), spmd::local_device_count(),
               fmt::join(spmd::local_devices(), " "));
  }

  // A mesh over every process's devices: "hosts" spans the processes, "local" stays inside one.
  spmd::Mesh mesh = spmd::make_mesh({2, 4}, {"hosts", "local"});
  spmd::Array x = spmd::arange(16, spmd::float32);  // the same host value in every process

  // Sums inside each process (shared memory), across processes (Gloo), and over both.
  auto sums = spmd::shard_map(
      [](const spmd::Array& b) {
        return std::vector<spmd::Array>{spmd::psum(b, "local"), spmd::psum(b, "hosts"),
                                        spmd::psum(b, {"hosts", "local"})};
      },
      mesh, spmd::P({"hosts", "local"}), {spmd::P("hosts"), spmd::P("local"), spmd::P()});
  std::vector<spmd::Array> out = sums(x);
  // The total is replicated, so every process can read all of it.
  if (printer) fmt::print("psum over both axes: {}\n", out[2]);
  // The per-process sums are sharded over "hosts": each process holds only its own.
  for (const spmd::Shard& s : out[0].addressable_shards()) {
    if (printer && s.device == spmd::local_devices()[0]) {
      fmt::print("psum over 'local' held by process 0: {}\n", s.data);
    }
  }
  if (printer) {
    fmt::print("process 0 holds {} of the {} shards of the 'hosts' sum\n",
               out[1].addressable_shards().size(), mesh.size());
  }
  try {
    out[0].to_vector<float>();  // needs process 1's shard
  } catch (const spmd::ValueError&) {
    if (printer) fmt::print("reading all of it here: ValueError\n");
  }
  // Every process calls process_allgather: afterwards each holds the whole value.
  spmd::Array whole = spmd::process_allgather(out[0]);
  if (printer) fmt::print("process_allgather of the 'local' sums: {}\n", whole);
  spmd::distributed::shutdown();
}
