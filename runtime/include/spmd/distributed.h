// SPDX-License-Identifier: Apache-2.0
// File: spmd/distributed.h
//
// Multi-process SPMD (JAX's jax.distributed): every process runs the same program and owns some
// devices; devices() lists every process's devices, ordered by process, and a mesh over them
// spans the processes. A mapped call runs the bodies of this process's devices; a collective whose
// group spans processes reduces inside each process through shared memory and between processes
// over Gloo (TCP), with the same bits as one process with the same global device count. Outputs
// are global arrays of which this process holds its addressable shards; a host read that needs
// another process's shard is a ValueError naming it (process_allgather fetches the whole value).
//
// initialize() must run before the devices are first used. Every argument left empty comes from
// the environment, so the same program runs under spmd-run, mpirun, SLURM and torchrun:
//   SPMD_COORDINATOR, SPMD_NUM_PROCESSES, SPMD_PROCESS_ID  (spmd-run sets these)
//   OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE            (OpenMPI's mpirun)
//   PMI_RANK / PMI_SIZE                                    (MPICH, Intel MPI)
//   SLURM_PROCID / SLURM_NTASKS, the first host of SLURM_STEP_NODELIST or SLURM_JOB_NODELIST
//   RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT           (torchrun)
// The coordinator is process 0: it serves a small key/value store (the rendezvous only) at the
// coordinator address. "file:///shared/dir" uses Gloo's FileStore on a shared file system instead.
//
// Example (run with `spmd-run -n 2 --devices-per-process 4 ./prog`):
//   spmd::distributed::initialize();                   // from the environment
//   spmd::Mesh mesh = spmd::make_mesh({8}, {"i"});     // 2 processes x 4 devices
//   auto f = spmd::shard_map([](const spmd::Array& x) { return spmd::psum(x, "i"); }, mesh,
//                            spmd::P("i"), spmd::P());
//   spmd::Array total = f(spmd::arange(16));           // replicated: every process can read it
//   fmt::print("{}: {}\n", spmd::process_index(), total);
//   spmd::distributed::shutdown();
//
// Thread safety: initialize and shutdown are called once each, from one thread.
#pragma once

#include <optional>
#include <string>

#include "spmd/array.h"
#include "spmd/device.h"

namespace spmd::distributed {

struct Options {
  // "host:port" of process 0's key/value store, or "file:///dir" for Gloo's FileStore in a
  // directory every process can reach. Default: SPMD_COORDINATOR, else MASTER_ADDR:MASTER_PORT
  // (port 29500 without MASTER_PORT), else the first SLURM host, else mpirun's host (Open MPI's
  // OMPI_MCA_orte_hnp_uri), else 127.0.0.1 when the launcher put every process on this host. As
  // in JAX, under SLURM and Open MPI the port is 61440 + the job id modulo 4096, so two jobs on
  // one host do not meet on one port (29500 when there is no job id).
  std::optional<std::string> coordinator_address;
  // How many processes the run has. Default: SPMD_NUM_PROCESSES, OMPI_COMM_WORLD_SIZE, PMI_SIZE,
  // SLURM_NTASKS or WORLD_SIZE (the first one set).
  std::optional<int> num_processes;
  // This process's index, 0..num_processes-1. Default: SPMD_PROCESS_ID, OMPI_COMM_WORLD_RANK,
  // PMI_RANK, SLURM_PROCID or RANK.
  std::optional<int> process_id;
  // How many CPU devices this process owns; every process must own as many. Default:
  // InitOptions::cpu_devices, else SPMD_CPU_DEVICES, else the hardware threads.
  std::optional<int> local_device_count;
  // How long initialize waits for the coordinator and for every process to join, in seconds.
  // Default: SPMD_DISTRIBUTED_TIMEOUT_S, else 60.
  std::optional<double> timeout_s;
};

// Joins the run: connects to the coordinator (process 0 serves it), checks that every process
// agrees on the process count and devices per process, and sets up the global device list.
// SIGPIPE is ignored from then on unless the program handles it (a peer that dies must fail a
// collective with an error, not kill this process).
// DistributedError when the coordinator does not answer within the timeout (naming its address),
// when the processes disagree, or when called twice; ValueError for missing or invalid settings
// (naming the options and environment variables that give them).
void initialize(Options options = {});

// Leaves the run after every process has called shutdown (a barrier with the timeout). The
// devices and the communicators made so far stay until the process exits. A process that exits
// without it is fine too: process 0, which serves the rendezvous store, then waits at exit (up to
// the timeout) until the other processes have ended or died.
void shutdown();

// Whether initialize has run (and shutdown has not).
bool is_initialized();

// This process's index and the process count (the same as spmd::process_index() and
// spmd::process_count()).
inline int process_index() { return spmd::process_index(); }
inline int process_count() { return spmd::process_count(); }

}  // namespace spmd::distributed

namespace spmd {

// The whole value of `x` in every process (JAX's multihost_utils.process_allgather), gathered by
// collectives over x's mesh: every process calls it with the same array at the same point of the
// program. The result is replicated over the mesh, so every process can read all of it
// (to_vector, item). Over a mesh axis x's spec leaves out, the value is the first device's along
// it, as a one-process read gives (a shard_map output with check_vma=false need not be equal
// there; JAX would give each process its own devices'). An array on one device is returned as it
// is.
Array process_allgather(const Array& x);

}  // namespace spmd
