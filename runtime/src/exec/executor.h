// Internal: one worker thread per device, and the launch of a mapped call onto a set of them.
//
// Launches are atomic across devices (one global launch lock), and each worker runs its tasks in
// FIFO order, so every device sees concurrent calls in the same order and two calls that share
// devices can never wait on each other crosswise.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "exec/futex.h"
#include "spmd/device.h"

namespace spmd::internal {

class Executor {
 public:
  using TaskFn = void (*)(void* arg, int index);

  // The process-wide executor (workers start lazily, one per device id).
  static Executor& instance();

  // Runs fn(arg, i) on the worker of devices[i] for every i, concurrently; returns when all have
  // returned. fn must not throw.
  void run(const std::vector<Device>& devices, TaskFn fn, void* arg);

  // True on a device worker thread.
  static bool on_worker_thread();

 private:
  struct Launch;
  struct Task {
    TaskFn fn;
    void* arg;
    int index;
    Launch* launch;
  };
  struct Worker {
    std::mutex mu;
    std::deque<Task> queue;
    std::atomic<uint32_t> signal{0};
    std::atomic<uint32_t> sleeping{0};
    std::thread thread;
  };

  Executor() = default;
  Worker& worker(int device_id);
  static void loop(Worker* w, WaitPolicy policy);

  std::mutex launch_mu_;
  std::vector<std::unique_ptr<Worker>> workers_;
};

}  // namespace spmd::internal
