// Device worker threads and call launch (executor.h).
#include "exec/executor.h"

#include <chrono>

#include "backend/registry.h"
#include "exec/futex.h"

namespace spmd::internal {
namespace {

// The devices of every platform in use: how many worker threads may compete for the cores.
int total_devices() {
  int n = 0;
  for (const Platform& p : platforms_in_use()) n += backend_for(p).device_count();
  return n;
}

thread_local bool tls_on_worker = false;
constexpr std::chrono::seconds kIdleSleep{3600};
// Launch::done goes 0 -> kDone -> kReleased; the caller may return only at kReleased.
constexpr uint32_t kDone = 1;
constexpr uint32_t kReleased = 2;

}  // namespace

struct Executor::Launch {
  std::atomic<int> remaining;
  std::atomic<uint32_t> done{0};
  std::atomic<uint32_t> caller_sleeping{0};
  std::atomic<int> unstarted;    // tasks no thread has taken yet: helping stops at 0
  std::vector<Worker*> workers;  // of the launch's devices, in order; set before any task runs
};

Executor& Executor::instance() {
  // Never destroyed: worker threads may outlive static destruction at exit.
  static Executor* executor = new Executor();
  return *executor;
}

Executor::Worker& Executor::worker(const Device& device) {
  const size_t platform = platform_index(device.platform);
  if (workers_.size() <= platform) workers_.resize(platform + 1);
  std::vector<std::unique_ptr<Worker>>& workers = workers_[platform];
  if (static_cast<int>(workers.size()) <= device.id) workers.resize(device.id + 1);
  std::unique_ptr<Worker>& w = workers[device.id];
  if (!w) {
    w = std::make_unique<Worker>();
    w->thread = std::thread(&Executor::loop, w.get(), wait_policy(total_devices() + 1));
    w->thread.detach();
  }
  return *w;
}

void Executor::notify(Worker& w) {
  w.signal.fetch_add(1, std::memory_order_seq_cst);
  if (w.sleeping.load(std::memory_order_seq_cst)) futex_wake_all(w.signal);
}

bool Executor::take(Worker& w, const Launch* launch, Task& task) {
  std::lock_guard<std::mutex> lock(w.mu);
  if (w.busy || w.queue.empty()) return false;
  if (launch != nullptr && w.queue.front().launch != launch) return false;
  task = w.queue.front();
  w.queue.pop_front();
  w.busy = true;
  task.launch->unstarted.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

void Executor::run_task(Worker& w, const Task& task) {
  task.fn(task.arg, task.index);
  bool more;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.busy = false;
    more = !w.queue.empty();
  }
  // The device's own thread may have gone to sleep while this task ran on another thread.
  if (more) notify(w);
}

int Executor::help(const Launch& launch) {
  int ran = 0;
  for (Worker* w : launch.workers) {
    if (launch.unstarted.load(std::memory_order_relaxed) == 0) break;
    Task task{};
    if (take(*w, &launch, task)) {
      run_task(*w, task);
      ++ran;
    }
  }
  return ran;
}

void Executor::complete(Launch& launch, int n) {
  if (n == 0 || launch.remaining.fetch_sub(n, std::memory_order_acq_rel) != n) return;
  launch.done.store(kDone, std::memory_order_seq_cst);
  if (launch.caller_sleeping.load(std::memory_order_seq_cst)) futex_wake_all(launch.done);
  // Last touch of `launch`, which lives on the caller's stack.
  launch.done.store(kReleased, std::memory_order_release);
}

void Executor::loop(Worker* w, WaitPolicy policy) {
  tls_on_worker = true;
  for (;;) {
    uint32_t seen = w->signal.load(std::memory_order_seq_cst);
    Task task{};
    if (!take(*w, nullptr, task)) {
      spin_then_yield(policy, [&] { return w->signal.load(std::memory_order_relaxed) != seen; });
      w->sleeping.store(1, std::memory_order_seq_cst);
      if (w->signal.load(std::memory_order_seq_cst) == seen)
        futex_wait(w->signal, seen, kIdleSleep);
      w->sleeping.store(0, std::memory_order_relaxed);
      continue;
    }
    run_task(*w, task);
    // This task's count is held until helping is over, so the launch outlives the help.
    complete(*task.launch, 1 + help(*task.launch));
  }
}

void Executor::run(const std::vector<Device>& devices, TaskFn fn, void* arg) {
  Launch launch;
  launch.remaining.store(static_cast<int>(devices.size()), std::memory_order_relaxed);
  launch.unstarted.store(static_cast<int>(devices.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> launch_lock(launch_mu_);
    for (const Device& d : devices) launch.workers.push_back(&worker(d));
    for (size_t i = 0; i < devices.size(); ++i) {
      Worker& w = *launch.workers[i];
      {
        std::lock_guard<std::mutex> lock(w.mu);
        w.queue.push_back(Task{fn, arg, static_cast<int>(i), &launch});
      }
      notify(w);
    }
  }
  // The caller helps too (not from a worker thread: a body that launched a call and helped would
  // hold two tasks).
  if (!tls_on_worker) complete(launch, help(launch));
  spin_then_yield(wait_policy(static_cast<int>(devices.size()) + 1),
                  [&] { return launch.done.load(std::memory_order_acquire) != 0; });
  launch.caller_sleeping.store(1, std::memory_order_seq_cst);
  while (launch.done.load(std::memory_order_seq_cst) == 0) futex_wait(launch.done, 0, kIdleSleep);
  // The last worker may still be between its store of kDone and its wake.
  while (launch.done.load(std::memory_order_acquire) != kReleased) cpu_relax();
}

}  // namespace spmd::internal
