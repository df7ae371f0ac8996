// SPDX-License-Identifier: Apache-2.0
// spmd::distributed (spmd/distributed.h): the settings of a multi-process run, the rendezvous
// store, and the cross-process communicators' Gloo contexts.
#include "spmd/distributed.h"

#include <fmt/format.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "backend/registry.h"
#include "distributed/cross_process_communicator.h"
#include "distributed/environment.h"
#include "distributed/tcp_store.h"
#include "exec/processes.h"
#include "settings.h"
#include "spmd/errors.h"

namespace spmd::distributed {
namespace {

using internal::kDefaultPort;
using internal::parse_int;
using internal::Resolved;
using internal::TcpStore;
using internal::TcpStoreServer;

// The state of an initialized run. Never destroyed at exit: device threads may still use it.
struct State {
  Resolved settings;
  int local_devices = 0;
  std::unique_ptr<TcpStoreServer> server;  // process 0 with a TCP coordinator
  std::shared_ptr<gloo::rendezvous::Store> store;
  std::shared_ptr<gloo::transport::Device> device;
  std::chrono::milliseconds collective_timeout{0};
  std::mutex mu;                         // guards instances
  std::map<std::string, int> instances;  // communicators made so far per member set
};

std::mutex& state_mutex() {
  static std::mutex mu;
  return mu;
}
State*& state_slot() {
  static State* state = nullptr;
  return state;
}
// States of runs that shut down: kept to the process's end (pooled communicators may still refer
// to them) and reachable from here, so that leak checkers do not count them.
std::vector<State*>& retired_states() {
  static auto* retired = new std::vector<State*>();
  return *retired;
}

std::chrono::milliseconds to_ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// The listening socket spmd-run hands process 0 in SPMD_COORDINATOR_FD (see spmd_run.cc), or -1.
// Taken once: programs this process starts do not inherit it.
int handed_down_socket() {
  const char* text = std::getenv("SPMD_COORDINATOR_FD");
  if (text == nullptr) return -1;
  const int fd = std::atoi(text);
  ::unsetenv("SPMD_COORDINATOR_FD");
  int type = 0;
  socklen_t len = sizeof type;
  // Only a stream socket that is open here: anything else came from elsewhere.
  if (fd <= STDERR_FILENO || ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
      type != SOCK_STREAM) {
    return -1;
  }
  return fd;
}

std::vector<char> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }
std::string text_of(const std::vector<char>& v) { return {v.begin(), v.end()}; }

// Opens the store named by the coordinator address; process 0 serves a TCP one.
void open_store(State& state, std::string& gloo_host) {
  const std::string& address = state.settings.coordinator;
  const auto timeout = to_ms(state.settings.timeout_s);
  if (address.rfind("file://", 0) == 0) {
    const std::string dir = address.substr(7);
    std::error_code ignored;
    std::filesystem::create_directories(dir, ignored);
    state.store = std::make_shared<gloo::rendezvous::FileStore>(dir);
    char host[256] = "127.0.0.1";
    if (state.settings.num_processes > 1 && ::gethostname(host, sizeof host) != 0) {
      std::strcpy(host, "127.0.0.1");
    }
    gloo_host = host;
    return;
  }
  const size_t colon = address.rfind(':');
  std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  const int port = colon == std::string::npos
                       ? kDefaultPort
                       : parse_int(address.substr(colon + 1), "the coordinator address's port");
  if (state.settings.process_id == 0) {
    state.server = std::make_unique<TcpStoreServer>(port, handed_down_socket());
  }
  auto store = std::make_shared<TcpStore>(host, port, timeout);
  gloo_host = store->local_address();
  state.store = store;
}

// Every process publishes what it believes about the run; each checks the others agree.
void join(State& state) {
  gloo::rendezvous::Store& store = *state.store;
  const Resolved& s = state.settings;
  char host[256] = "?";
  ::gethostname(host, sizeof host);
  const std::string mine =
      fmt::format("{} {} {} {}", s.num_processes, state.local_devices, ::getpid(), host);
  const auto timeout = to_ms(s.timeout_s);
  auto key = [](int p) { return fmt::format("spmd/process/{}", p); };
  if (auto* tcp = dynamic_cast<TcpStore*>(&store)) {
    if (tcp->add(fmt::format("spmd/claim/{}", s.process_id), 1) != 1) {
      throw DistributedError(fmt::format(
          "two processes claim process index {}: every process of the run needs its own index "
          "(SPMD_PROCESS_ID, OMPI_COMM_WORLD_RANK, SLURM_PROCID or RANK).",
          s.process_id));
    }
  }
  store.set(key(s.process_id), bytes_of(mine));
  std::vector<std::string> keys;
  for (int p = 0; p < s.num_processes; ++p) keys.push_back(key(p));
  try {
    store.wait({keys[0]}, timeout);  // process 0 first: a mismatched count shows at once
    for (int p = 0; p < s.num_processes; ++p) {
      store.wait({keys[p]}, timeout);
      int count = 0, devices = 0;
      std::sscanf(text_of(store.get(keys[p])).c_str(), "%d %d", &count, &devices);
      if (count != s.num_processes) {
        throw DistributedError(fmt::format(
            "inconsistent process counts: process {} was started for a run of {} processes, "
            "process {} (this one) for {}. Start every process with the same count.",
            p, count, s.process_id, s.num_processes));
      }
      if (devices != state.local_devices) {
        throw DistributedError(fmt::format(
            "inconsistent device counts: process {} owns {} devices, process {} (this one) owns "
            "{}; every process must own as many (Options::local_device_count, "
            "SPMD_CPU_DEVICES or spmd-run --devices-per-process).",
            p, devices, s.process_id, state.local_devices));
      }
    }
  } catch (const DistributedError&) {
    throw;
  } catch (const std::exception& e) {
    throw DistributedError(fmt::format(
        "process {} of {} waited {:g} s for the other processes to join at the coordinator {} "
        "and they did not all come: {}",
        s.process_id, s.num_processes, s.timeout_s, s.coordinator, e.what()));
  }
}

// A hash of the member ids that is the same in every process (the store key of a communicator).
std::string member_key(const std::vector<Device>& members) {
  uint64_t h = 1469598103934665603ull;
  for (const Device& d : members) {
    for (char c : fmt::format("{}:{},", d.platform.name(), d.id)) {
      h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    }
  }
  return fmt::format("{}x{:016x}", members.size(), h);
}

std::shared_ptr<internal::CrossProcessExchange> make_exchange(State& state,
                                                              const std::vector<Device>& members,
                                                              internal::Cancel& cancel) {
  std::set<int> processes;
  for (const Device& d : members) processes.insert(d.process_index);
  const int me = state.settings.process_id;
  const int rank = static_cast<int>(std::distance(processes.begin(), processes.find(me)));
  std::string key = member_key(members);
  {
    std::lock_guard<std::mutex> lock(state.mu);
    key = fmt::format("spmd/comm/{}/{}", key, state.instances[key]++);
  }
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(cancel.deadline() -
                                                                    internal::Cancel::Clock::now());
  // A context's timeout bounds its connection and, once connected, every blocking read and write
  // of its sockets (those in synchronous mode).
  auto connect = [&](const std::string& prefix, std::chrono::milliseconds timeout) {
    auto context = std::make_shared<gloo::rendezvous::Context>(rank, processes.size());
    context->setTimeout(std::max(timeout, std::chrono::milliseconds(1)));
    try {
      gloo::rendezvous::PrefixStore prefixed(prefix, *state.store);
      context->connectFullMesh(prefixed, state.device);
    } catch (const std::exception& e) {
      if (cancel.aborted()) cancel.throw_aborted();
      throw DistributedError(
          fmt::format("could not connect the processes {} of a collective over {}: {}",
                      fmt::join(processes, ", "), fmt::join(members, ", "), e.what()));
    }
    return context;
  };
  std::shared_ptr<gloo::rendezvous::Context> context = connect(key, left);
  context->setTimeout(state.collective_timeout);
  const std::chrono::nanoseconds timeout = cancel.collective_timeout();
  if (timeout.count() <= 0)
    return std::make_shared<internal::CrossProcessExchange>(members, context);
  std::shared_ptr<gloo::rendezvous::Context> blocking =
      connect(key + "/blocking", std::chrono::ceil<std::chrono::milliseconds>(timeout));
  for (int p = 0; p < blocking->size; ++p) {
    if (p != rank) blocking->getPair(p)->setSync(/*sync=*/true, /*busyPoll=*/false);
  }
  return std::make_shared<internal::CrossProcessExchange>(members, context, std::move(blocking),
                                                          timeout);
}

// At exit without shutdown(): process 0 serves the store, which the others may still need (to
// join, to connect communicators, to shut down), so it waits until they have closed their
// connections (ended or died), for at most the run's timeout.
void at_exit() {
  std::lock_guard<std::mutex> lock(state_mutex());
  State* state = state_slot();
  if (state == nullptr || !state->server) return;
  if (!state->server->wait_for_clients(1, to_ms(state->settings.timeout_s))) {
    std::fprintf(stderr,
                 "spmd: process 0 exits while other processes are still connected to its "
                 "key/value store (waited %g s); they lose the coordinator.\n",
                 state->settings.timeout_s);
  }
}

}  // namespace

void initialize(Options options) {
  std::lock_guard<std::mutex> lock(state_mutex());
  if (state_slot() != nullptr) {
    throw DistributedError(
        "spmd::distributed::initialize was already called in this process; call it once, at the "
        "start of main.");
  }
  if (internal::devices_in_use()) {
    throw ValueError(
        "spmd::distributed::initialize must run before the devices are first used (before "
        "spmd::devices(), make_mesh or any array): move it to the start of main.");
  }
  auto state = std::make_unique<State>();
  state->settings = internal::resolve(options);
  // Gloo writes to its sockets without MSG_NOSIGNAL: a peer that died must fail the collective
  // with an error, not kill this process with SIGPIPE (Python-based runtimes ignore it too). A
  // handler the program installed is left alone.
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) {
    ::signal(SIGPIPE, SIG_IGN);
  }
  if (options.local_device_count) {
    spmd::initialize({.cpu_devices = *options.local_device_count});
  }
  state->local_devices = internal::settings().cpu_devices;
  state->collective_timeout = to_ms(internal::settings().timeout_s);
  if (state->settings.num_processes > 1) {
    std::string gloo_host;
    open_store(*state, gloo_host);
    try {
      join(*state);
    } catch (...) {
      // The others may still be reading what they need to report their own view of the
      // problem: process 0 keeps serving until they have gone (or the timeout).
      if (state->server) {
        state->server->wait_for_clients(1, to_ms(state->settings.timeout_s));
      }
      throw;
    }
    gloo::transport::tcp::attr attr;
    attr.hostname = gloo_host;
    state->device = gloo::transport::tcp::CreateDevice(attr);
  }
  internal::set_process_layout({state->settings.process_id, state->settings.num_processes});
  State* raw = state.get();
  internal::set_cross_process_factory(
      [raw](const std::vector<Device>& members, int rank, internal::Rendezvous& rendezvous,
            internal::Cancel& cancel) -> std::unique_ptr<internal::Communicator> {
        auto exchange = rendezvous.shared<internal::CrossProcessExchange>(
            [&] { return make_exchange(*raw, members, cancel); });
        return std::make_unique<internal::CrossProcessCommunicator>(std::move(exchange), rank);
      });
  state_slot() = state.release();
  static const bool at_exit_registered = std::atexit(&at_exit) == 0;
  (void)at_exit_registered;
}

void shutdown() {
  std::lock_guard<std::mutex> lock(state_mutex());
  State* state = state_slot();
  if (state == nullptr) return;
  if (state->store) {
    const Resolved& s = state->settings;
    const auto timeout = to_ms(s.timeout_s);
    std::vector<std::string> done, left;
    for (int p = 0; p < s.num_processes; ++p) {
      done.push_back(fmt::format("spmd/shutdown/{}", p));
      left.push_back(fmt::format("spmd/left/{}", p));
    }
    state->store->set(done[s.process_id], {'1'});
    state->store->wait(done, timeout);
    state->store->set(left[s.process_id], {'1'});
    // Process 0 serves the store: it stays until every process has read the last key.
    if (state->server) state->store->wait(left, timeout);
  }
  retired_states().push_back(state);
  state_slot() = nullptr;
  internal::set_cross_process_factory(nullptr);
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(state_mutex());
  return state_slot() != nullptr;
}

}  // namespace spmd::distributed
