// Internal: one worker thread per device, and the launch of a mapped call onto a set of them.
//
// Launches are atomic across devices (one global launch lock), and each device runs its tasks one
// at a time in FIFO order, so every device sees concurrent calls in the same order and two calls
// that share devices can never wait on each other crosswise.
//
// Idle threads help: a worker that has finished its device's task of a launch, and the calling
// thread, run the launch's tasks that no thread has started yet (any thread may run a device's
// task; the device stays one task at a time). When devices outnumber cores, a call whose bodies
// do not wait on each other then costs a few thread switches instead of one per device. A thread
// holds at most one unfinished task of a launch and helps only after its own task of that launch
// is done, so a task blocked in a collective never holds back a task it waits for: that task is
// run by its own worker or by another idle thread.
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

  // The process-wide executor (workers start lazily, one per device).
  static Executor& instance();

  // Runs fn(arg, i) on the worker of devices[i] for every i, concurrently; returns when all have
  // returned. fn must not throw.
  void run(const std::vector<Device>& devices, TaskFn fn, void* arg);

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
    bool busy = false;  // a task of this device is running (on some thread); guarded by mu
    std::atomic<uint32_t> signal{0};
    std::atomic<uint32_t> sleeping{0};
    std::thread thread;
  };

  Executor() = default;
  Worker& worker(const Device& device);
  static void loop(Worker* w, WaitPolicy policy);
  // Takes the next task of `w` if no task of it is running (and, if `launch` is given, the task
  // belongs to it); marks `w` busy.
  static bool take(Worker& w, const Launch* launch, Task& task);
  // Runs a taken task and clears `w`'s busy mark, waking its thread if more tasks wait.
  static void run_task(Worker& w, const Task& task);
  // Runs the tasks of `launch` that no thread has started; returns how many.
  static int help(const Launch& launch);
  // Counts `n` finished tasks of `launch`, releasing its caller after the last one.
  static void complete(Launch& launch, int n);
  // Tells `w`'s thread that its queue or busy mark changed.
  static void notify(Worker& w);

  std::mutex launch_mu_;
  std::vector<std::vector<std::unique_ptr<Worker>>> workers_;  // [platform index][device id]
};

}  // namespace spmd::internal
