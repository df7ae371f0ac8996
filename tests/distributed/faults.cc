// SPDX-License-Identifier: Apache-2.0
// Faults of multi-process runs, one per mode, each run by CTest through spmd-run (2 processes x 2
// devices). Every process prints what it caught, with the error's class, so the test can check
// who saw what:
//   kill      process 1 dies by SIGKILL inside a body, while process 0 waits in the collective
//   mismatch  process 1 runs psum over another shape than process 0
//   skip      process 1's devices skip a collective that process 0's run
//   stall     process 1 sleeps in a body past the collective timeout (2 s), alive and silent
//   leave     process 1 returns from main (status 0) before a step that process 0 still runs
//   remote    a host read of a shard that lives in the other process
//   pmap_size a legacy pmap whose mapped size is not this process's device count
//   pmap_nest a nested pmap (compat shim) over the devices of both processes
#include <fmt/format.h>
#include <signal.h>
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

int report(const char* kind, const spmd::Error& e, Clock::time_point since) {
  const double s = std::chrono::duration<double>(Clock::now() - since).count();
  fmt::print("process {} caught spmd::{} after {:.1f} s: {}\n", spmd::process_index(), kind, s,
             e.what());
  return 3;
}

int run(const std::string& mode) {
  spmd::Mesh mesh = spmd::make_mesh({spmd::device_count()}, {"i"});
  const int me = spmd::process_index();
  Clock::time_point since = Clock::now();
  try {
    if (mode == "remote") {
      auto f = spmd::shard_map([](const spmd::Array& b) { return b * 2.0f; }, mesh, spmd::P("i"),
                               spmd::P("i"));
      spmd::Array y = f(spmd::arange(8, spmd::float32));
      fmt::print("process {} holds {} shards\n", me, y.addressable_shards().size());
      y.to_vector<float>();  // needs the other process's half
      fmt::print("process {} read remote data without an error\n", me);
      return 1;
    }
    if (mode == "pmap_size") {
      auto f = spmd::legacy::pmap([](const spmd::Array& b) { return spmd::psum(b, "i"); }, "i");
      f(spmd::arange(3, spmd::float32));
      return 1;
    }
    if (mode == "pmap_nest") {
      auto inner = spmd::compat::pmap([](const spmd::Array& b) { return b * 2.0f; }, "j");
      auto f = spmd::compat::pmap([&](const spmd::Array& b) { return inner(b); }, "i");
      f(spmd::arange(spmd::local_device_count() * 2, spmd::float32).reshape({-1, 2}));
      return 1;
    }
    for (int step = 0; step < 40; ++step) {
      since = Clock::now();
      if (me == 1 && step == 10 && mode == "leave") {
        fmt::print("process 1 leaves before step 10\n");
        return 0;
      }
      auto f = spmd::shard_map(
          [&](const spmd::Array& b) {
            const bool odd_one = me == 1 && step == 10;
            if (odd_one && mode == "kill") ::raise(SIGKILL);
            if (odd_one && mode == "skip") return b;
            if (odd_one && mode == "stall") std::this_thread::sleep_for(std::chrono::seconds(6));
            if (odd_one && mode == "mismatch")
              return spmd::psum(b.reshape({2, -1}), "i").reshape({-1});
            return spmd::psum(b, "i");
          },
          mesh, spmd::P("i"), spmd::P("i"), {.check_vma = false, .name = "step"});
      f(spmd::arange(spmd::device_count() * 256, spmd::float32));
    }
    fmt::print("process {} completed every step\n", me);
    spmd::distributed::shutdown();
    return 0;
  } catch (const spmd::ValueError& e) {
    const int status = report("ValueError", e, since);
    return mode == "remote" || mode == "pmap_size" ? 0 : status;
  } catch (const spmd::NotImplementedError& e) {
    return mode == "pmap_nest" ? (report("NotImplementedError", e, since), 0)
                               : report("NotImplementedError", e, since);
  } catch (const spmd::CollectiveMismatch& e) {
    return report("CollectiveMismatch", e, since);
  } catch (const spmd::CollectiveTimeout& e) {
    return report("CollectiveTimeout", e, since);
  } catch (const spmd::DistributedError& e) {
    return report("DistributedError", e, since);
  } catch (const spmd::Error& e) {
    return report("Error", e, since);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: faults kill|mismatch|skip|stall|leave|remote|pmap_size|pmap_nest\n");
    return 2;
  }
  spmd::distributed::initialize();
  return run(argv[1]);
}
