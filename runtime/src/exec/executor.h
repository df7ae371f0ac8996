// SPDX-License-Identifier: Apache-2.0
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
//
// A launch lives on the heap, held by its caller and by each task until it completes, so that the
// caller may stop waiting for tasks that never return (a body stuck in user code): the owner of
// the launch decides when (Owner::poll), and the executor then abandons them. The device of an
// abandoned task is quarantined until the task returns: new launches on it fail at once with
// DeviceUnavailable, and tasks of other launches already queued behind it are reported to their
// owners (Owner::device_lost). The thread that runs the abandoned task is given up too: if it was
// a device's worker thread, that device gets a new one, and the old thread ends once the task
// returns. A caller that itself runs a body (helping) cannot stop waiting while that body runs.
//
// Waking a worker costs a thread switch, and a body run on another thread than its caller's moves
// its data between cores: for small bodies that is most of a call's time. So when devices
// outnumber cores, a launch from a thread outside any body wakes no worker when its site's bodies
// took little time last time (their sum under kSerialBudgetNs: the caller runs them all), and
// otherwise only as many workers as there are cores besides the caller's (those of the last
// tasks; the caller runs the first).
// The tasks not yet running get their workers once a body is about to wait on other devices
// (body_waits, from its first collective; such a site never runs on its caller alone again) or
// the caller has helped all it could.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "exec/futex.h"
#include "spmd/device.h"

namespace spmd::internal {

class Executor {
 public:
  using Clock = std::chrono::steady_clock;
  struct Launch;

  // What the waiting caller does next (Owner::poll).
  struct Verdict {
    // Stop waiting: the tasks not completed are abandoned; those at positions `stuck` still run a
    // body and their devices are quarantined, with `why` as the reason given to later users.
    bool abandon = false;
    std::vector<int> stuck;
    std::string why;
    // Otherwise wait until this time (or a wake()) and ask again.
    Clock::time_point until = Clock::time_point::max();
  };
  // The owner of a launch (the launch path): what the executor calls back. `arg` is the owner's
  // state, kept alive by the launch's `keep` while any task may still run.
  struct Owner {
    // Runs the task of launch position `index`; must not throw.
    void (*run)(void* arg, int index);
    // Called by the waiting caller when the launch is woken (wake()) or a poll's time has come.
    Verdict (*poll)(void* arg);
    // The task at `index` is queued on a device that was quarantined: it can only run once the
    // abandoned body there returns. `why` says so; the owner fails its call.
    void (*device_lost)(void* arg, int index, const std::string& why);
  };

  // The process-wide executor (workers start lazily, one per device).
  static Executor& instance();

  // Runs owner.run(arg, i) on the worker of devices[i] for every i, concurrently; returns when all
  // have returned, or when owner.poll says to abandon the rest. `*handle` is set to the launch
  // before any task runs (for wake()). `keep` owns `arg` and is released once every task has
  // completed, possibly after this returns. Throws before queuing anything: DeviceUnavailable
  // when a device is quarantined, ResourceExhausted when a worker thread cannot start (the threads
  // this launch started are stopped again). `site` identifies what runs (the mapped function's
  // code; null: unknown): the time its bodies took on the caller decides how many workers the
  // next launch of it wakes.
  void run(const std::vector<Device>& devices, const Owner& owner, void* arg,
           std::shared_ptr<void> keep, Launch** handle, const void* site);

  // Makes the launch's caller poll its owner now, and after every task that completes from now
  // on. Thread-safe; the launch must be alive (called from one of its tasks, its caller or its
  // owner's callbacks).
  static void wake(Launch* launch);

  // A body of the launch is about to wait on the other devices' bodies (its first collective),
  // which must all run now: wakes the workers of every task run() left to its caller, and marks
  // the site as one whose calls need every worker. Cheap after the first call. Thread-safe; the
  // launch must be alive.
  static void body_waits(Launch* launch);

  // A body of the launch has waited a whole deadline for a body that has not started: wakes the
  // worker of every task of the launch again, so that a wake-up that went missing costs one
  // deadline instead of a hang (a worker with nothing to take goes back to sleep). Thread-safe;
  // the launch must be alive.
  static void rewake(Launch* launch);

  // For tests: starting a new worker thread fails, as when the process is out of threads, once
  // `after` more threads have started (-1: never).
  static void fail_thread_starts_for_testing(int after);
  // For tests: the next wake-up of the worker of device id `device_id` is lost (-1: none).
  static void lose_next_wake_for_testing(int device_id);

 private:
  struct Worker;
  // The thread-local state of every thread that runs tasks.
  struct ThreadState {
    Worker* owner = nullptr;  // the worker whose loop this thread runs; null for a caller
    int running = 0;          // tasks this thread is running (a body may launch a nested call)
    std::atomic<bool> abandoned{false};
  };
  struct Task {
    Launch* launch;
    int index;
  };
  struct Worker {
    Device device;
    std::mutex mu;
    std::deque<Task> queue;
    bool busy = false;  // a task of this device is running (on some thread); guarded by mu
    Task running{};     // that task, and the thread that runs it; guarded by mu
    ThreadState* runner = nullptr;
    std::string quarantine;  // why the device takes no work, when quarantined; guarded by mu
    // Whether `quarantine` is set: every launch reads it without taking mu.
    std::atomic<bool> quarantined{false};
    std::atomic<uint32_t> signal{0};
    std::atomic<uint32_t> sleeping{0};
    std::atomic<bool> stop{false};  // the launch that started this worker was rolled back
  };

  Executor() = default;
  static ThreadState& thread_state();
  // For a launch its caller helps: the first launch index whose worker run() wakes (n: none, the
  // caller runs every task).
  static int first_woken(int n, const void* site);
  // The worker of `device`, created (with its thread) on first use; `started` receives workers
  // created by this call. Called under launch_mu_.
  Worker& worker(const Device& device, std::vector<Worker*>& started);
  // Starts `w`'s loop on a new thread; std::system_error when the thread cannot start.
  static std::thread start_thread(Worker& w);
  static void loop(Worker* w, WaitPolicy policy);
  // Takes the next task of `w` if no task of it is running (and, if `launch` is given, the task
  // belongs to it); marks `w` busy. Without `wait_for_lock`, gives up when another thread holds
  // `w`'s lock.
  static bool take(Worker& w, const Launch* launch, Task& task, bool wait_for_lock);
  // Wakes the workers of every task of the launch that run() left to its caller (once).
  static void start_all(Launch* launch);
  // Wakes the workers of the tasks run() left to its caller (tasks [0, woken_from)).
  static void wake_unwoken(Launch& launch);
  // Runs a taken task and clears `w`'s busy mark, waking its thread if more tasks wait.
  static void run_task(Worker& w, const Task& task);
  // Runs the tasks of `launch` that no thread has started; returns how many. The caller goes
  // through the devices from the first, helping workers from the last (woken first), so that they
  // seldom meet.
  static int help(Launch& launch, bool from_back);
  // Counts `n` finished tasks of `launch` and drops their references.
  static void complete(Launch& launch, int n);
  static void release(Launch& launch, int n);
  // Tells `w`'s thread that its queue or busy mark changed.
  static void notify(Worker& w);
  // Waits for the launch's tasks, polling its owner, until they complete or are abandoned.
  void wait(Launch& launch);
  void abandon(Launch& launch, const Verdict& verdict);
  // Stops and joins the threads of workers started by a launch that could not be queued.
  void roll_back(const std::vector<Worker*>& started);

  std::mutex launch_mu_;
  std::vector<std::vector<std::unique_ptr<Worker>>> workers_;  // [platform index][device id]
  std::vector<std::pair<Worker*, std::thread>> joinable_;      // started by the current launch
};

}  // namespace spmd::internal
