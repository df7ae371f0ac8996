// SPDX-License-Identifier: Apache-2.0
// Internal: the settings of a multi-process run, from spmd::distributed::Options and else from the
// environment of the launcher (spmd-run, mpirun, srun, torchrun); spmd/distributed.h lists the
// variables and their order.
#pragma once

#include <optional>
#include <string>

#include "spmd/distributed.h"

namespace spmd::internal {

inline constexpr int kDefaultPort = 29500;
inline constexpr double kDefaultTimeoutS = 60;

struct Resolved {
  std::string coordinator;  // "host:port" or "file:///dir"; may be empty with one process
  int num_processes = 1;
  int process_id = 0;
  double timeout_s = kDefaultTimeoutS;
};

// ValueError naming the options and variables when something is missing or invalid.
Resolved resolve(const distributed::Options& options);

// The coordinator of an Open MPI job (mpirun's host and a port chosen by the job id) from its
// OMPI_MCA_orte_hnp_uri; nullopt when the value has another form.
std::optional<std::string> openmpi_coordinator(const std::string& uri);

// The first host of a SLURM node list: "node[03-05,9],gpu1" -> "node03".
std::string first_slurm_host(const std::string& list);

// A non-negative integer; ValueError naming `what` otherwise.
int parse_int(const std::string& text, const std::string& what);

}  // namespace spmd::internal
