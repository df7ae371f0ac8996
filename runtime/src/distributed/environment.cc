// SPDX-License-Identifier: Apache-2.0
// Settings of a multi-process run from options and the environment (environment.h).
#include "distributed/environment.h"

#include <fmt/format.h>

#include <cstdlib>
#include <initializer_list>
#include <optional>

#include "spmd/errors.h"

namespace spmd::internal {
namespace {

// A value from the first of `names` that is set in the environment, with the variable's name.
struct FromEnv {
  std::string value;
  std::string name;
};
std::optional<FromEnv> first_env(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return FromEnv{v, name};
  }
  return std::nullopt;
}

// A port in [61440, 65535] chosen by the launcher's job id, as JAX's cluster detection does, so
// that two jobs sharing a host are unlikely to pick the same one (a fixed default would collide).
int job_port(uint64_t job_id) { return static_cast<int>(job_id % 4096) + 61440; }

}  // namespace

std::optional<std::string> openmpi_coordinator(const std::string& uri) {
  // "1609039872.0;tcp://10.0.0.1,10.1.0.1:56293;tcp6://[fd00::2]:41193": the job id, then the
  // addresses of mpirun's host, where the first rank runs unless told otherwise.
  char* end = nullptr;
  const unsigned long long job = std::strtoull(uri.c_str(), &end, 10);
  if (end == uri.c_str() || *end != '.') return std::nullopt;
  std::string host;
  if (size_t tcp = uri.find("tcp://"); tcp != std::string::npos) {
    host = uri.substr(tcp + 6, uri.find_first_of(",:;", tcp + 6) - tcp - 6);
  } else if (size_t tcp6 = uri.find("tcp6://["); tcp6 != std::string::npos) {
    host = uri.substr(tcp6 + 8, uri.find_first_of(",]", tcp6 + 8) - tcp6 - 8);
    host = "[" + host + "]";
  }
  if (host.empty() || host == "[]") return std::nullopt;
  // Open MPI's job ids are multiples of 4096: dividing first spreads jobs over the range.
  return fmt::format("{}:{}", host, job_port(job / 4096));
}

int parse_int(const std::string& text, const std::string& what) {
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < 0 || value > (1 << 24)) {
    throw ValueError(fmt::format("{} must be a non-negative integer, got '{}'", what, text));
  }
  return static_cast<int>(value);
}

std::string first_slurm_host(const std::string& list) {
  std::string first;
  int depth = 0;
  for (char c : list) {
    if (c == ',' && depth == 0) break;
    depth += c == '[' ? 1 : c == ']' ? -1 : 0;
    first += c;
  }
  size_t open = first.find('[');
  if (open == std::string::npos) return first;
  size_t end = first.find_first_of(",-]", open);
  return first.substr(0, open) + first.substr(open + 1, end - open - 1);
}

Resolved resolve(const distributed::Options& options) {
  Resolved r;
  std::optional<FromEnv> n =
      options.num_processes
          ? std::optional<FromEnv>({std::to_string(*options.num_processes), "num_processes"})
          : first_env({"SPMD_NUM_PROCESSES", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS",
                       "WORLD_SIZE"});
  std::optional<FromEnv> id =
      options.process_id
          ? std::optional<FromEnv>({std::to_string(*options.process_id), "process_id"})
          : first_env(
                {"SPMD_PROCESS_ID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"});
  if (!n || !id) {
    throw ValueError(fmt::format(
        "spmd::distributed::initialize does not know {}: pass Options::num_processes and "
        "Options::process_id, or start the processes with spmd-run, mpirun, srun or torchrun "
        "(which set SPMD_NUM_PROCESSES/SPMD_PROCESS_ID, OMPI_COMM_WORLD_SIZE/RANK, PMI_SIZE/RANK, "
        "SLURM_NTASKS/PROCID or WORLD_SIZE/RANK).",
        !n && !id ? "the process count nor this process's index"
        : !n      ? "the process count"
                  : "this process's index"));
  }
  r.num_processes = parse_int(n->value, n->name);
  r.process_id = parse_int(id->value, id->name);
  if (r.num_processes < 1 || r.process_id >= r.num_processes) {
    throw ValueError(
        fmt::format("process index {} (from {}) is not in [0, {}) (the process count, from {})",
                    r.process_id, id->name, r.num_processes, n->name));
  }
  if (options.timeout_s) {
    r.timeout_s = *options.timeout_s;
  } else if (std::optional<FromEnv> t = first_env({"SPMD_DISTRIBUTED_TIMEOUT_S"})) {
    r.timeout_s = std::strtod(t->value.c_str(), nullptr);
  }
  if (!(r.timeout_s > 0)) {
    throw ValueError(
        fmt::format("the distributed timeout must be positive, got {:g} s "
                    "(Options::timeout_s or SPMD_DISTRIBUTED_TIMEOUT_S)",
                    r.timeout_s));
  }
  if (options.coordinator_address) {
    r.coordinator = *options.coordinator_address;
  } else if (std::optional<FromEnv> c = first_env({"SPMD_COORDINATOR"})) {
    r.coordinator = c->value;
  } else if (std::optional<FromEnv> m = first_env({"MASTER_ADDR"})) {
    std::optional<FromEnv> port = first_env({"MASTER_PORT"});
    r.coordinator = m->value + ":" + (port ? port->value : std::to_string(kDefaultPort));
  } else if (std::optional<FromEnv> s =
                 first_env({"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"})) {
    std::optional<FromEnv> job = first_env({"SLURM_JOB_ID"});
    const int port = job ? job_port(parse_int(job->value, job->name)) : kDefaultPort;
    r.coordinator = fmt::format("{}:{}", first_slurm_host(s->value), port);
  } else if (std::optional<FromEnv> uri = first_env({"OMPI_MCA_orte_hnp_uri"});
             uri && openmpi_coordinator(uri->value)) {
    r.coordinator = *openmpi_coordinator(uri->value);
  } else if (std::optional<FromEnv> local =
                 first_env({"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"});
             local && parse_int(local->value, local->name) == r.num_processes) {
    r.coordinator = fmt::format("127.0.0.1:{}", kDefaultPort);  // every process on this host
  } else if (r.num_processes > 1) {
    throw ValueError(
        "spmd::distributed::initialize does not know the coordinator's address: pass "
        "Options::coordinator_address (\"host:port\" of process 0, or \"file:///shared/dir\"), "
        "or set SPMD_COORDINATOR or MASTER_ADDR/MASTER_PORT.");
  }
  return r;
}

}  // namespace spmd::internal
