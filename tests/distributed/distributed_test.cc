// SPDX-License-Identifier: Apache-2.0
// The rendezvous store and spmd::distributed::initialize, with real processes: each test starts
// copies of this binary (fork + exec, "worker" modes below) and checks what they report.
#include "spmd/distributed.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "distributed/environment.h"
#include "distributed/tcp_store.h"
#include "spmd/errors.h"

namespace {

using Clock = std::chrono::steady_clock;
using spmd::internal::TcpStore;
using spmd::internal::TcpStoreServer;
using ::testing::HasSubstr;

std::string self_path;

struct Result {
  int status = -1;  // exit status, or -1 when killed at the deadline
  std::string output;
};

// Runs this binary with `args` (and extra environment), collects stdout+stderr; kills it after
// `timeout`.
struct Worker {
  pid_t pid = -1;
  int fd = -1;
};

Worker start(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  int fds[2];
  EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    for (const std::string& e : env) ::putenv(const_cast<char*>(e.c_str()));
    std::vector<char*> argv{const_cast<char*>(self_path.c_str())};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(self_path.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  return Worker{pid, fds[0]};
}

Result finish(Worker w, std::chrono::seconds timeout = std::chrono::seconds(30)) {
  Result r;
  const Clock::time_point deadline = Clock::now() + timeout;
  ::fcntl(w.fd, F_SETFL, O_NONBLOCK);
  char buf[4096];
  for (;;) {
    ssize_t n;
    while ((n = ::read(w.fd, buf, sizeof buf)) > 0) r.output.append(buf, n);
    int status = 0;
    if (::waitpid(w.pid, &status, WNOHANG) == w.pid) {
      while ((n = ::read(w.fd, buf, sizeof buf)) > 0) r.output.append(buf, n);
      r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      break;
    }
    if (Clock::now() > deadline) {
      ::kill(w.pid, SIGKILL);
      ::waitpid(w.pid, nullptr, 0);
      r.output += "\n<killed at the test's deadline>";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ::close(w.fd);
  return r;
}

// A loopback port nobody listens on: bound, then closed (a program that took it meanwhile would
// fail the test that uses it, not hide anything).
int closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// A socket listening on a loopback port of the kernel's choice, handed to process 0 as spmd-run
// hands it (SPMD_COORDINATOR_FD), so that no other program can take the port before process 0
// serves its store there. The workers inherit it (it is not close-on-exec).
struct Coordinator {
  int fd = -1;
  std::string address;
  Coordinator() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd, 64), 0);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    address = fmt::format("127.0.0.1:{}", ntohs(addr.sin_port));
  }
  ~Coordinator() { ::close(fd); }
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;
  // The environment of process 0.
  std::vector<std::string> env() const { return {fmt::format("SPMD_COORDINATOR_FD={}", fd)}; }
};

// ---- worker modes (run in the child processes) ----

// Sets key/<index>, waits for every other worker's key, checks the values, bumps a counter.
int store_worker(int port, int index, int count) {
  TcpStore store("127.0.0.1", port, std::chrono::seconds(20));
  store.set(fmt::format("key/{}", index), {'v', static_cast<char>('0' + index)});
  for (int p = 0; p < count; ++p) {
    std::vector<char> v = store.get(fmt::format("key/{}", p));
    if (v != std::vector<char>{'v', static_cast<char>('0' + p)}) {
      fmt::print("worker {}: key/{} has the wrong value\n", index, p);
      return 1;
    }
  }
  store.add("counter", 1);
  fmt::print("worker {} saw every key\n", index);
  return 0;
}

// spmd::distributed::initialize with explicit options; prints "joined" or the error.
int init_worker(const std::string& address, int count, int id, int devices) {
  try {
    spmd::distributed::initialize({.coordinator_address = address,
                                   .num_processes = count,
                                   .process_id = id,
                                   .local_device_count = devices,
                                   .timeout_s = 5});
    fmt::print("process {} joined: {} devices, {} local\n", spmd::process_index(),
               spmd::device_count(), spmd::local_device_count());
    spmd::distributed::shutdown();
    return 0;
  } catch (const spmd::Error& e) {
    fmt::print("process {} failed: {}\n", id, e.what());
    return 3;
  }
}

// ---- tests ----

TEST(TcpStore, SetGetAddAcrossProcesses) {
  TcpStoreServer server(0);
  std::vector<Worker> workers;
  for (int i = 0; i < 4; ++i) {
    workers.push_back(
        start({"store-worker", std::to_string(server.port()), std::to_string(i), "4"}));
  }
  for (int i = 0; i < 4; ++i) {
    Result r = finish(workers[i]);
    EXPECT_EQ(r.status, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr(fmt::format("worker {} saw every key", i)));
  }
  TcpStore store("127.0.0.1", server.port(), std::chrono::seconds(5));
  EXPECT_EQ(store.add("counter", 0), 4);
}

TEST(TcpStore, WaitEndsAtItsDeadlineNamingTheKeys) {
  TcpStoreServer server(0);
  TcpStore store("127.0.0.1", server.port(), std::chrono::seconds(5));
  store.set("present", {'x'});
  const Clock::time_point start = Clock::now();
  try {
    store.wait({"present", "absent"}, std::chrono::milliseconds(300));
    FAIL() << "wait returned for a key nobody set";
  } catch (const spmd::DistributedError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'absent'"));
    EXPECT_THAT(e.what(), ::testing::Not(HasSubstr("'present'")));
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("127.0.0.1:{}", server.port())));
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
}

TEST(TcpStore, CoordinatorThatNeverAnswersIsNamed) {
  const int port = closed_port();
  const Clock::time_point start = Clock::now();
  try {
    TcpStore store("127.0.0.1", port, std::chrono::milliseconds(500));
    FAIL() << "connected to a port nobody listens on";
  } catch (const spmd::DistributedError& e) {
    EXPECT_THAT(e.what(), HasSubstr(fmt::format("coordinator at 127.0.0.1:{} did not answer within "
                                                "0.5 s",
                                                port)));
  }
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
}

TEST(TcpStore, ServerOutlivesAClientThatDies) {
  TcpStoreServer server(0);
  Worker w = start({"store-worker", std::to_string(server.port()), "0", "2"});  // waits for key/1
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ::kill(w.pid, SIGKILL);
  finish(w);
  TcpStore store("127.0.0.1", server.port(), std::chrono::seconds(5));
  store.set("after", {'y'});
  EXPECT_EQ(store.get("after"), std::vector<char>{'y'});
}

TEST(Initialize, TwoProcessesJoinOverTcp) {
  Coordinator coordinator;
  const std::string& address = coordinator.address;
  Worker a = start({"init-worker", address, "2", "0", "3"}, coordinator.env());
  Worker b = start({"init-worker", address, "2", "1", "3"});
  Result ra = finish(a), rb = finish(b);
  EXPECT_EQ(ra.status, 0) << ra.output;
  EXPECT_EQ(rb.status, 0) << rb.output;
  EXPECT_THAT(ra.output, HasSubstr("process 0 joined: 6 devices, 3 local"));
  EXPECT_THAT(rb.output, HasSubstr("process 1 joined: 6 devices, 3 local"));
}

TEST(Initialize, TwoProcessesJoinOverGlooFileStore) {
  const std::string dir =
      (std::filesystem::temp_directory_path() / fmt::format("spmd_file_store_{}", ::getpid()))
          .string();
  std::filesystem::remove_all(dir);
  Worker a = start({"init-worker", "file://" + dir, "2", "0", "2"});
  Worker b = start({"init-worker", "file://" + dir, "2", "1", "2"});
  Result ra = finish(a), rb = finish(b);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(ra.status, 0) << ra.output;
  EXPECT_EQ(rb.status, 0) << rb.output;
  EXPECT_THAT(rb.output, HasSubstr("process 1 joined: 4 devices, 2 local"));
}

TEST(Initialize, InconsistentProcessCountsAreNamed) {
  Coordinator coordinator;
  const std::string& address = coordinator.address;
  Worker a = start({"init-worker", address, "2", "0", "2"}, coordinator.env());
  Worker b = start({"init-worker", address, "3", "1", "2"});
  Result ra = finish(a), rb = finish(b);
  EXPECT_EQ(rb.status, 3) << rb.output;
  EXPECT_THAT(rb.output, HasSubstr("inconsistent process counts: process 0 was started for a run "
                                   "of 2 processes, process 1 (this one) for 3"));
  EXPECT_EQ(ra.status, 3) << ra.output;  // process 0 sees process 1's count too
}

TEST(Initialize, InconsistentDeviceCountsAreNamed) {
  Coordinator coordinator;
  const std::string& address = coordinator.address;
  Worker a = start({"init-worker", address, "2", "0", "2"}, coordinator.env());
  Worker b = start({"init-worker", address, "2", "1", "4"});
  Result ra = finish(a), rb = finish(b);
  EXPECT_EQ(rb.status, 3) << rb.output;
  EXPECT_THAT(rb.output, HasSubstr("inconsistent device counts: process 0 owns 2 devices, "
                                   "process 1 (this one) owns 4"));
  EXPECT_EQ(ra.status, 3) << ra.output;
}

TEST(Initialize, CoordinatorThatIsNotThereEndsInSeconds) {
  const std::string address = fmt::format("127.0.0.1:{}", closed_port());
  const Clock::time_point start_time = Clock::now();
  Result r = finish(start({"init-worker", address, "2", "1", "2"}));  // process 0 never starts
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("the coordinator at " + address + " did not answer within 5 s"));
  EXPECT_LT(Clock::now() - start_time, std::chrono::seconds(15));
}

// ---- the environment (no processes needed) ----

class Environment : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kNames) ::unsetenv(name);
  }
  void TearDown() override { SetUp(); }
  static constexpr const char* kNames[] = {"SPMD_COORDINATOR",
                                           "SPMD_NUM_PROCESSES",
                                           "SPMD_PROCESS_ID",
                                           "OMPI_COMM_WORLD_RANK",
                                           "OMPI_COMM_WORLD_SIZE",
                                           "OMPI_COMM_WORLD_LOCAL_SIZE",
                                           "PMI_RANK",
                                           "PMI_SIZE",
                                           "SLURM_PROCID",
                                           "SLURM_NTASKS",
                                           "SLURM_STEP_NODELIST",
                                           "SLURM_JOB_NODELIST",
                                           "SLURM_NODELIST",
                                           "RANK",
                                           "WORLD_SIZE",
                                           "MASTER_ADDR",
                                           "MASTER_PORT",
                                           "MPI_LOCALNRANKS",
                                           "SLURM_JOB_ID",
                                           "OMPI_MCA_orte_hnp_uri",
                                           "SPMD_DISTRIBUTED_TIMEOUT_S"};
};

TEST_F(Environment, SpmdVariables) {
  ::setenv("SPMD_COORDINATOR", "10.0.0.1:1234", 1);
  ::setenv("SPMD_NUM_PROCESSES", "4", 1);
  ::setenv("SPMD_PROCESS_ID", "3", 1);
  ::setenv("RANK", "0", 1);  // lower priority
  spmd::internal::Resolved r = spmd::internal::resolve({});
  EXPECT_EQ(r.coordinator, "10.0.0.1:1234");
  EXPECT_EQ(r.num_processes, 4);
  EXPECT_EQ(r.process_id, 3);
}

TEST_F(Environment, Torchrun) {
  ::setenv("RANK", "1", 1);
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("MASTER_ADDR", "host7", 1);
  ::setenv("MASTER_PORT", "4000", 1);
  spmd::internal::Resolved r = spmd::internal::resolve({});
  EXPECT_EQ(r.coordinator, "host7:4000");
  EXPECT_EQ(r.num_processes, 2);
  EXPECT_EQ(r.process_id, 1);
}

TEST_F(Environment, OpenMpiOnOneHost) {
  ::setenv("OMPI_COMM_WORLD_RANK", "2", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4", 1);
  spmd::internal::Resolved r = spmd::internal::resolve({});
  EXPECT_EQ(r.coordinator, "127.0.0.1:29500");
  EXPECT_EQ(r.process_id, 2);
}

TEST_F(Environment, OpenMpiAcrossHostsUsesMpirunsHostAndAPortFromTheJob) {
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  // Job 1609039872 = 392832 * 4096; 392832 % 4096 = 3712.
  ::setenv("OMPI_MCA_orte_hnp_uri",
           "1609039872.0;tcp://192.0.2.2,10.0.0.7:56293;tcp6://[fd00::2]:41193", 1);
  EXPECT_EQ(spmd::internal::resolve({}).coordinator, "192.0.2.2:65152");
  EXPECT_EQ(spmd::internal::openmpi_coordinator("1609039872.0;tcp6://[fd00::2,fd00::3]:41193"),
            "[fd00::2]:65152");
  EXPECT_EQ(spmd::internal::openmpi_coordinator("not-a-uri"), std::nullopt);
  EXPECT_EQ(spmd::internal::openmpi_coordinator("12.0;udp://x:1"), std::nullopt);
}

TEST_F(Environment, SlurmFirstHost) {
  ::setenv("SLURM_PROCID", "5", 1);
  ::setenv("SLURM_NTASKS", "8", 1);
  ::setenv("SLURM_JOB_NODELIST", "gpu[03-05,9],cpu1", 1);
  spmd::internal::Resolved r = spmd::internal::resolve({});
  EXPECT_EQ(r.coordinator, "gpu03:29500");  // no job id: the default port
  EXPECT_EQ(r.process_id, 5);
  EXPECT_EQ(r.num_processes, 8);
  ::setenv("SLURM_JOB_ID", "123457", 1);  // 123457 % 4096 = 577
  EXPECT_EQ(spmd::internal::resolve({}).coordinator, "gpu03:62017");
  EXPECT_EQ(spmd::internal::first_slurm_host("n1,n2"), "n1");
  EXPECT_EQ(spmd::internal::first_slurm_host("a[7]"), "a7");
}

TEST_F(Environment, OptionsWinOverTheEnvironment) {
  ::setenv("PMI_RANK", "1", 1);
  ::setenv("PMI_SIZE", "2", 1);
  spmd::internal::Resolved r = spmd::internal::resolve(
      {.coordinator_address = "file:///tmp/x", .num_processes = 3, .process_id = 0});
  EXPECT_EQ(r.coordinator, "file:///tmp/x");
  EXPECT_EQ(r.num_processes, 3);
  EXPECT_EQ(r.process_id, 0);
}

// The ValueError resolve() raises in the current environment, or "" when it raises none.
std::string resolve_error() {
  try {
    spmd::internal::resolve({});
  } catch (const spmd::ValueError& e) {
    return e.what();
  }
  return "";
}

TEST_F(Environment, MissingSettingsAreNamed) {
  EXPECT_THAT(resolve_error(), HasSubstr("does not know the process count nor this process's "
                                         "index"));
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("RANK", "2", 1);
  EXPECT_THAT(resolve_error(), HasSubstr("process index 2 (from RANK) is not in [0, 2)"));
  ::setenv("RANK", "1", 1);
  EXPECT_THAT(resolve_error(), HasSubstr("does not know the coordinator's address"));
}

}  // namespace

int main(int argc, char** argv) {
  self_path = std::filesystem::canonical("/proc/self/exe").string();
  if (argc >= 2 && std::strcmp(argv[1], "store-worker") == 0 && argc == 5) {
    return store_worker(std::atoi(argv[2]), std::atoi(argv[3]), std::atoi(argv[4]));
  }
  if (argc >= 2 && std::strcmp(argv[1], "init-worker") == 0 && argc == 6) {
    return init_worker(argv[2], std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5]));
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
