// Device worker threads and call launch (executor.h).
#include "exec/executor.h"

#include <chrono>

#include "exec/futex.h"

namespace spmd::internal {
namespace {

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
};

Executor& Executor::instance() {
  // Never destroyed: worker threads may outlive static destruction at exit.
  static Executor* executor = new Executor();
  return *executor;
}

bool Executor::on_worker_thread() { return tls_on_worker; }

Executor::Worker& Executor::worker(int device_id) {
  if (static_cast<int>(workers_.size()) <= device_id) workers_.resize(device_id + 1);
  std::unique_ptr<Worker>& w = workers_[device_id];
  if (!w) {
    w = std::make_unique<Worker>();
    w->thread = std::thread(&Executor::loop, w.get(), wait_policy(device_count() + 1));
    w->thread.detach();
  }
  return *w;
}

void Executor::loop(Worker* w, WaitPolicy policy) {
  tls_on_worker = true;
  for (;;) {
    uint32_t seen = w->signal.load(std::memory_order_seq_cst);
    Task task{};
    bool have = false;
    {
      std::lock_guard<std::mutex> lock(w->mu);
      if (!w->queue.empty()) {
        task = w->queue.front();
        w->queue.pop_front();
        have = true;
      }
    }
    if (!have) {
      spin_then_yield(policy, [&] { return w->signal.load(std::memory_order_relaxed) != seen; });
      w->sleeping.store(1, std::memory_order_seq_cst);
      if (w->signal.load(std::memory_order_seq_cst) == seen)
        futex_wait(w->signal, seen, kIdleSleep);
      w->sleeping.store(0, std::memory_order_relaxed);
      continue;
    }
    task.fn(task.arg, task.index);
    Launch* launch = task.launch;
    if (launch->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      launch->done.store(kDone, std::memory_order_seq_cst);
      if (launch->caller_sleeping.load(std::memory_order_seq_cst)) futex_wake_all(launch->done);
      // Last touch of `launch`, which lives on the caller's stack.
      launch->done.store(kReleased, std::memory_order_release);
    }
  }
}

void Executor::run(const std::vector<Device>& devices, TaskFn fn, void* arg) {
  Launch launch;
  launch.remaining.store(static_cast<int>(devices.size()), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> launch_lock(launch_mu_);
    for (size_t i = 0; i < devices.size(); ++i) {
      Worker& w = worker(devices[i].id);
      {
        std::lock_guard<std::mutex> lock(w.mu);
        w.queue.push_back(Task{fn, arg, static_cast<int>(i), &launch});
      }
      w.signal.fetch_add(1, std::memory_order_seq_cst);
      if (w.sleeping.load(std::memory_order_seq_cst)) futex_wake_all(w.signal);
    }
  }
  spin_then_yield(wait_policy(static_cast<int>(devices.size()) + 1),
                  [&] { return launch.done.load(std::memory_order_acquire) != 0; });
  launch.caller_sleeping.store(1, std::memory_order_seq_cst);
  while (launch.done.load(std::memory_order_seq_cst) == 0) futex_wait(launch.done, 0, kIdleSleep);
  // The last worker may still be between its store of kDone and its wake.
  while (launch.done.load(std::memory_order_acquire) != kReleased) cpu_relax();
}

}  // namespace spmd::internal
