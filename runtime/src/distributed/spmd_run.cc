// SPDX-License-Identifier: Apache-2.0
// spmd-run: starts the processes of a multi-process spmd run on this machine (torchrun's habit).
//
//   spmd-run -n N [--devices-per-process L] [--coordinator ADDRESS] [--grace-s S] [--] prog args...
//
// Each process gets SPMD_COORDINATOR (127.0.0.1 and a port spmd-run listens on, or --coordinator:
// "host:port", "file:///shared/dir"), SPMD_NUM_PROCESSES and SPMD_PROCESS_ID (and
// SPMD_CPU_DEVICES=L), so spmd::distributed::initialize() needs no arguments; process 0 also gets
// the listening socket itself (SPMD_COORDINATOR_FD) and serves the store on it. Every line a
// process prints is prefixed with "[i] ". When a process fails (a non-zero exit or a signal)
// spmd-run names it, gives the others --grace-s seconds (default 10) to end on their own (they
// raise spmd errors once the failed process is gone), then kills what is left and exits with the
// first failure's status (128+signal for a signal), naming also a process that had exited with
// status 0 before the failure (it may have left a collective the others still ran). No process
// outlives spmd-run: each child is killed when spmd-run dies.
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  int processes = 0;
  std::optional<int> devices_per_process;
  double grace_s = 10;
  std::string coordinator;  // empty: 127.0.0.1 and a port spmd-run listens on
  std::vector<char*> command;
};

[[noreturn]] void usage(const std::string& problem) {
  fmt::print(stderr,
             "spmd-run: {}\nusage: spmd-run -n N [--devices-per-process L] [--grace-s S] [--] "
             "prog args...\n",
             problem);
  std::exit(2);
}

int positive(const char* text, const char* what) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || v <= 0 || v > 4096) {
    usage(fmt::format("{} must be a positive integer, got '{}'", what, text));
  }
  return static_cast<int>(v);
}

Args parse(int argc, char** argv) {
  Args a;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "-n" || arg == "--nproc" || arg == "--processes") {
      a.processes = positive(value(), "-n");
    } else if (arg == "--devices-per-process") {
      a.devices_per_process = positive(value(), "--devices-per-process");
    } else if (arg == "--coordinator") {
      a.coordinator = value();
    } else if (arg == "--grace-s") {
      a.grace_s = std::strtod(value(), nullptr);
    } else if (arg == "--") {
      ++i;
      break;
    } else if (!arg.empty() && arg[0] == '-') {
      usage("unknown option " + arg);
    } else {
      break;
    }
  }
  if (a.processes == 0) usage("-n N (the number of processes) is required");
  for (; i < argc; ++i) a.command.push_back(argv[i]);
  if (a.command.empty()) usage("no program given");
  a.command.push_back(nullptr);
  return a;
}

// A socket listening on a loopback port of the kernel's choice, for process 0's key/value store:
// spmd-run keeps it open and hands it to process 0 (SPMD_COORDINATOR_FD), so that no other program
// can take the port before process 0 serves it.
int coordinator_socket(int& port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd, 1024) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    fmt::print(stderr, "spmd-run: cannot listen on a loopback port: {}\n", std::strerror(errno));
    std::exit(2);
  }
  port = ntohs(addr.sin_port);
  return fd;
}

struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;        // pipes from its stdout and stderr
  std::string out_buf, err_buf;  // partial lines
  bool exited = false;
  int status = 0;
};

// Writes the complete lines of `buf` to `to`, each prefixed "[index] "; everything when `flush`.
void emit(std::string& buf, int index, FILE* to, bool flush) {
  size_t start = 0;
  for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
    fmt::print(to, "[{}] {}\n", index, std::string_view(buf).substr(start, nl - start));
  }
  buf.erase(0, start);
  if (flush && !buf.empty()) {
    fmt::print(to, "[{}] {}\n", index, buf);
    buf.clear();
  }
  std::fflush(to);
}

std::string describe(int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("was killed by signal {} ({})", WTERMSIG(status),
                       sigabbrev_np(WTERMSIG(status)) ? sigabbrev_np(WTERMSIG(status)) : "?");
  }
  return fmt::format("exited with status {}", WEXITSTATUS(status));
}

int exit_code(int status) {
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

volatile sig_atomic_t g_signal = 0;
void on_signal(int sig) { g_signal = sig; }

// Starts process `index`; `listening` (>= 0) is the coordinator's socket, handed to it.
Child spawn(const Args& a, int index, const std::string& coordinator, int listening) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    fmt::print(stderr, "spmd-run: pipe: {}\n", std::strerror(errno));
    std::exit(2);
  }
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    fmt::print(stderr, "spmd-run: fork: {}\n", std::strerror(errno));
    std::exit(2);
  }
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // no orphan when spmd-run dies
    if (::getppid() != parent) ::_exit(127);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::setenv("SPMD_COORDINATOR", coordinator.c_str(), 1);
    ::setenv("SPMD_NUM_PROCESSES", std::to_string(a.processes).c_str(), 1);
    ::setenv("SPMD_PROCESS_ID", std::to_string(index).c_str(), 1);
    if (a.devices_per_process) {
      ::setenv("SPMD_CPU_DEVICES", std::to_string(*a.devices_per_process).c_str(), 1);
    }
    if (listening >= 0) {
      ::fcntl(listening, F_SETFD, 0);  // survives exec in this child only
      ::setenv("SPMD_COORDINATOR_FD", std::to_string(listening).c_str(), 1);
    }
    ::execvp(a.command[0], a.command.data());
    fmt::print(stderr, "spmd-run: cannot run {}: {}\n", a.command[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  Child c;
  c.pid = pid;
  c.out = out[0];
  c.err = err[0];
  return c;
}

// Reads what is available from a child's pipe; closes it at end of file.
void drain(int& fd, std::string& buf, int index, FILE* to) {
  char chunk[65536];
  ssize_t n = ::read(fd, chunk, sizeof chunk);
  if (n > 0) {
    buf.append(chunk, static_cast<size_t>(n));
    emit(buf, index, to, false);
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    emit(buf, index, to, true);
    ::close(fd);
    fd = -1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  int port = 0;
  const int listening = args.coordinator.empty() ? coordinator_socket(port) : -1;
  const std::string coordinator =
      args.coordinator.empty() ? fmt::format("127.0.0.1:{}", port) : args.coordinator;
  std::vector<Child> children;
  for (int i = 0; i < args.processes; ++i) {
    children.push_back(spawn(args, i, coordinator, i == 0 ? listening : -1));
  }
  if (listening >= 0) ::close(listening);

  int first_failed = -1;
  // The first process to exit with status 0, before any failure: when others then fail, a
  // collective they ran with it may have lost its partner, and the first process to fail is a
  // victim, not the cause.
  int left_early = -1;
  Clock::time_point kill_at = Clock::time_point::max();
  bool killed = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, bool>> which;  // child, stderr?
    for (int i = 0; i < args.processes; ++i) {
      if (children[i].out >= 0)
        fds.push_back({children[i].out, POLLIN, 0}), which.push_back({i, false});
      if (children[i].err >= 0)
        fds.push_back({children[i].err, POLLIN, 0}), which.push_back({i, true});
    }
    ::poll(fds.data(), fds.size(), 50);
    for (size_t k = 0; k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      Child& c = children[which[k].first];
      if (which[k].second) {
        drain(c.err, c.err_buf, which[k].first, stderr);
      } else {
        drain(c.out, c.out_buf, which[k].first, stdout);
      }
    }
    bool all_done = true;
    int failed_now = -1;  // the first failure reaped in this sweep
    for (int i = 0; i < args.processes; ++i) {
      Child& c = children[i];
      if (!c.exited && ::waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.exited = true;
        const bool failed = !(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0);
        if (!failed && left_early < 0 && first_failed < 0 && failed_now < 0) left_early = i;
        // A process killed by a signal fails before the others notice (they see its connections
        // close and exit with an error): when one sweep reaps both, it is the cause.
        if (failed && (failed_now < 0 ||
                       (WIFSIGNALED(c.status) && !WIFSIGNALED(children[failed_now].status)))) {
          failed_now = i;
        }
      }
      all_done = all_done && c.exited && c.out < 0 && c.err < 0;
    }
    if (failed_now >= 0 && first_failed < 0 && !killed) {
      first_failed = failed_now;
      fmt::print(stderr, "spmd-run: process {} (pid {}) {}; the others get {:g} s to end\n",
                 failed_now, children[failed_now].pid, describe(children[failed_now].status),
                 args.grace_s);
      kill_at = Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(args.grace_s * 1000));
    }
    if (all_done) break;
    if (g_signal != 0 && !killed) {
      for (Child& c : children) {
        if (!c.exited) ::kill(c.pid, g_signal);
      }
      g_signal = 0;
    }
    if (!killed && Clock::now() >= kill_at) {
      killed = true;
      for (int i = 0; i < args.processes; ++i) {
        if (children[i].exited) continue;
        fmt::print(stderr, "spmd-run: killing process {} (pid {}), still running\n", i,
                   children[i].pid);
        ::kill(children[i].pid, SIGKILL);
      }
    }
  }
  if (first_failed < 0) {
    for (int i = 0; i < args.processes; ++i) {
      if (exit_code(children[i].status) != 0) first_failed = i;
    }
  }
  if (first_failed < 0) return 0;
  std::string summary;
  for (int i = 0; i < args.processes; ++i) {
    summary += fmt::format("{}process {} {}", summary.empty() ? "" : "; ", i,
                           describe(children[i].status));
  }
  fmt::print(stderr, "spmd-run: process {} failed first; {}\n", first_failed, summary);
  if (left_early >= 0) {
    fmt::print(stderr,
               "spmd-run: process {} exited with status 0 before any process failed: if the others "
               "failed in a collective, it had left it (look at why process {} finished early)\n",
               left_early, left_early);
  }
  return exit_code(children[first_failed].status);
}
