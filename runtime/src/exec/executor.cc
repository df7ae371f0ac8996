// SPDX-License-Identifier: Apache-2.0
// Device worker threads and call launch (executor.h).
#include "exec/executor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <system_error>
#include <thread>

#include "backend/registry.h"
#include "exec/futex.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace {

// The devices of every platform in use: how many worker threads may compete for the cores.
int total_devices() {
  int n = 0;
  for (const Platform& p : platforms_in_use()) n += backend_for(p).device_count();
  return n;
}

constexpr std::chrono::seconds kIdleSleep{3600};

// A launch whose bodies together took less than this on the caller runs them all there: bringing
// another thread into the call costs more than it saves. Measured on 2 cores (a body spinning for
// w µs, caller alone vs with a worker): the two break even near a total of 8-12 µs (2 devices at
// w = 3, 4 at w = 2, 8 at w = 1); 8 identity bodies take 4.3 µs alone and 10 µs with workers.
constexpr int64_t kSerialBudgetNs = 12000;

// What each body of a launch site took on the caller last time (ns), by site: a small table of
// the sites seen lately, written and read without locks (a stale or mixed-up entry only costs one
// call a worse choice of threads). Never destroyed: worker threads may outlive static destruction.
struct SiteCost {
  std::atomic<const void*> site{nullptr};
  std::atomic<int64_t> task_ns{0};
};
constexpr size_t kSiteSlots = 64;
SiteCost* site_costs = new SiteCost[kSiteSlots];

SiteCost& site_slot(const void* site) {
  return site_costs[(reinterpret_cast<uintptr_t>(site) >> 4) % kSiteSlots];
}

// The last cost recorded for `site`, or -1.
int64_t predicted_task_ns(const void* site) {
  if (site == nullptr) return -1;
  SiteCost& slot = site_slot(site);
  if (slot.site.load(std::memory_order_relaxed) != site) return -1;
  return slot.task_ns.load(std::memory_order_relaxed);
}

void record_task_ns(const void* site, int64_t ns) {
  if (site == nullptr) return;
  SiteCost& slot = site_slot(site);
  slot.task_ns.store(ns, std::memory_order_relaxed);
  slot.site.store(site, std::memory_order_relaxed);
}
std::atomic<int> thread_starts_left{-1};  // fail_thread_starts_for_testing; -1: unlimited
std::atomic<int> lost_wake_device{-1};    // lose_next_wake_for_testing; -1: none
std::atomic<int> worker_threads{0};       // running worker loops, for messages

ResourceExhausted thread_error(const Device& device, const std::system_error& e) {
  return ResourceExhausted(fmt::format(
      "RESOURCE_EXHAUSTED: could not start the worker thread of {} ({} worker threads running): "
      "{}. Each device is a host thread: use fewer devices (spmd::initialize({{.cpu_devices = "
      "...}}) or SPMD_CPU_DEVICES) or raise the process's thread limit.",
      device.str(), worker_threads.load(), e.what()));
}

}  // namespace

struct Executor::Launch {
  Owner owner;
  void* arg;
  std::shared_ptr<void> keep;
  std::atomic<int> refs;            // the caller's, and one per task not completed
  std::atomic<int> remaining;       // tasks not completed
  std::atomic<int> unstarted;       // tasks no thread has taken yet: helping stops at 0
  std::atomic<uint32_t> events{0};  // bumped to wake the caller (last completion, wake())
  std::atomic<uint32_t> caller_sleeping{0};
  std::atomic<bool> wake_each{false};  // wake the caller after every completion (after wake())
  std::vector<Worker*> workers;        // of the launch's devices, in order
  int woken_from = 0;  // run() woke the workers of tasks [woken_from, n); start_all the rest
  std::atomic<bool> all_woken{false};
  std::atomic<bool> bodies_wait{false};  // a body entered a collective (body_waits)
};

Executor& Executor::instance() {
  // Never destroyed: worker threads may outlive static destruction at exit.
  static Executor* executor = new Executor();
  return *executor;
}

Executor::ThreadState& Executor::thread_state() {
  thread_local ThreadState state;
  return state;
}

void Executor::fail_thread_starts_for_testing(int after) { thread_starts_left.store(after); }

void Executor::lose_next_wake_for_testing(int device_id) { lost_wake_device.store(device_id); }

std::thread Executor::start_thread(Worker& w) {
  int left = thread_starts_left.load();
  while (left > 0 && !thread_starts_left.compare_exchange_weak(left, left - 1)) {
  }
  if (left == 0) {
    throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again),
                            "thread creation refused (fail_thread_starts_for_testing)");
  }
  return std::thread(&Executor::loop, &w, wait_policy(total_devices() + 1));
}

Executor::Worker& Executor::worker(const Device& device, std::vector<Worker*>& started) {
  const size_t platform = platform_index(device.platform);
  if (workers_.size() <= platform) workers_.resize(platform + 1);
  std::vector<std::unique_ptr<Worker>>& workers = workers_[platform];
  if (static_cast<int>(workers.size()) <= device.id) workers.resize(device.id + 1);
  std::unique_ptr<Worker>& w = workers[device.id];
  if (!w) {
    auto made = std::make_unique<Worker>();
    made->device = device;
    try {
      joinable_.emplace_back(made.get(), start_thread(*made));
    } catch (const std::system_error& e) {
      throw thread_error(device, e);
    }
    w = std::move(made);
    started.push_back(w.get());
  }
  return *w;
}

void Executor::roll_back(const std::vector<Worker*>& started) {
  for (Worker* w : started) {
    w->stop.store(true);
    notify(*w);
  }
  for (auto& [w, thread] : joinable_) thread.join();
  joinable_.clear();
  for (Worker* w : started) workers_[platform_index(w->device.platform)][w->device.id].reset();
}

void Executor::notify(Worker& w) {
  if (lost_wake_device.load(std::memory_order_relaxed) >= 0) {
    int id = w.device.id;
    if (lost_wake_device.compare_exchange_strong(id, -1)) return;
  }
  w.signal.fetch_add(1, std::memory_order_seq_cst);
  if (w.sleeping.load(std::memory_order_seq_cst)) futex_wake_all(w.signal);
}

void Executor::wake(Launch* launch) {
  launch->wake_each.store(true, std::memory_order_seq_cst);
  launch->events.fetch_add(1, std::memory_order_seq_cst);
  if (launch->caller_sleeping.load(std::memory_order_seq_cst)) futex_wake_all(launch->events);
}

bool Executor::take(Worker& w, const Launch* launch, Task& task, bool wait_for_lock) {
  std::unique_lock<std::mutex> lock(w.mu, std::defer_lock);
  if (wait_for_lock) {
    lock.lock();
  } else if (!lock.try_lock()) {
    return false;
  }
  if (w.busy || w.queue.empty()) return false;
  if (launch != nullptr && w.queue.front().launch != launch) return false;
  task = w.queue.front();
  w.queue.pop_front();
  w.busy = true;
  w.running = task;
  w.runner = &thread_state();
  task.launch->unstarted.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

void Executor::body_waits(Launch* launch) {
  if (!launch->bodies_wait.load(std::memory_order_relaxed)) {
    launch->bodies_wait.store(true, std::memory_order_relaxed);
  }
  start_all(launch);
}

void Executor::start_all(Launch* launch) {
  if (launch->all_woken.load(std::memory_order_acquire) ||
      launch->all_woken.exchange(true, std::memory_order_seq_cst)) {
    return;
  }
  wake_unwoken(*launch);
}

void Executor::wake_unwoken(Launch& launch) {
  for (int i = 0; i < launch.woken_from; ++i) notify(*launch.workers[i]);
}

void Executor::rewake(Launch* launch) {
  if (launch->unstarted.load(std::memory_order_acquire) == 0) return;
  for (Worker* w : launch->workers) notify(*w);
}

void Executor::run_task(Worker& w, const Task& task) {
  ThreadState& self = thread_state();
  ++self.running;
  task.launch->owner.run(task.launch->arg, task.index);
  --self.running;
  bool more;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.busy = false;
    w.running = Task{};
    w.runner = nullptr;
    // An abandoned body has returned: the device is usable again.
    if (self.abandoned.load(std::memory_order_relaxed)) {
      w.quarantine.clear();
      w.quarantined.store(false, std::memory_order_release);
    }
    more = !w.queue.empty();
  }
  // The device's own thread may have gone to sleep while this task ran on another thread.
  if (more) notify(w);
}

int Executor::help(Launch& launch, bool from_back) {
  const int n = static_cast<int>(launch.workers.size());
  int ran = 0;
  // The first pass skips a device whose lock another thread holds (the caller and a helping
  // worker would otherwise queue on each lock in turn, and a contended mutex sleeps); the second
  // takes what is left.
  for (bool wait_for_lock : {false, true}) {
    for (int k = 0; k < n; ++k) {
      if (launch.unstarted.load(std::memory_order_relaxed) == 0) return ran;
      Worker& w = *launch.workers[from_back ? n - 1 - k : k];
      Task task{};
      if (take(w, &launch, task, wait_for_lock)) {
        run_task(w, task);
        ++ran;
      }
    }
  }
  return ran;
}

void Executor::release(Launch& launch, int n) {
  if (launch.refs.fetch_sub(n, std::memory_order_acq_rel) == n) delete &launch;
}

void Executor::complete(Launch& launch, int n) {
  if (n == 0) return;
  const bool last = launch.remaining.fetch_sub(n, std::memory_order_acq_rel) == n;
  if (last || launch.wake_each.load(std::memory_order_seq_cst)) {
    launch.events.fetch_add(1, std::memory_order_seq_cst);
    if (launch.caller_sleeping.load(std::memory_order_seq_cst)) futex_wake_all(launch.events);
  }
  release(launch, n);
}

void Executor::loop(Worker* w, WaitPolicy policy) {
  ThreadState& self = thread_state();
  self.owner = w;
  worker_threads.fetch_add(1);
  while (!w->stop.load(std::memory_order_relaxed)) {
    uint32_t seen = w->signal.load(std::memory_order_seq_cst);
    Task task{};
    if (!take(*w, nullptr, task, /*wait_for_lock=*/true)) {
      spin_then_yield(policy, [&] { return w->signal.load(std::memory_order_relaxed) != seen; });
      w->sleeping.store(1, std::memory_order_seq_cst);
      if (w->signal.load(std::memory_order_seq_cst) == seen)
        futex_wait(w->signal, seen, kIdleSleep);
      w->sleeping.store(0, std::memory_order_relaxed);
      continue;
    }
    run_task(*w, task);
    // This task's reference is held until helping is over, so the launch outlives the help. A
    // thread whose task was abandoned has been replaced: it helps no more and ends.
    const bool abandoned = self.abandoned.load(std::memory_order_acquire);
    complete(*task.launch, 1 + (abandoned ? 0 : help(*task.launch, /*from_back=*/true)));
    if (abandoned) break;
  }
  worker_threads.fetch_sub(1);
}

int Executor::first_woken(int n, const void* site) {
  // Where workers outnumber cores they yield and sleep when idle, so waking one is slow; where
  // they have a core each they spin, and the measurement above does not hold.
  static const bool oversubscribed = wait_policy(total_devices() + 1).yields > 0;
  const int64_t predicted = predicted_task_ns(site);
  if (oversubscribed && predicted >= 0 && predicted * n < kSerialBudgetNs) return n;
  static const int spare_cores = available_cores() - 1;
  return n - std::min(n, spare_cores);
}

void Executor::run(const std::vector<Device>& devices, const Owner& owner, void* arg,
                   std::shared_ptr<void> keep, Launch** handle, const void* site) {
  const int n = static_cast<int>(devices.size());
  auto* launch = new Launch{owner, arg, std::move(keep), n + 1, n, n};
  launch->workers.reserve(devices.size());
  // Only a caller outside every body helps (a body that launched a call and helped would hold
  // two tasks), so only it may leave tasks unwoken.
  const ThreadState& self = thread_state();
  const bool helps = self.owner == nullptr && self.running == 0;
  launch->woken_from = helps ? first_woken(n, site) : 0;
  launch->all_woken.store(launch->woken_from == 0, std::memory_order_relaxed);
  *handle = launch;
  try {
    std::lock_guard<std::mutex> launch_lock(launch_mu_);
    std::vector<Worker*> started;
    try {
      for (const Device& d : devices) launch->workers.push_back(&worker(d, started));
    } catch (...) {
      roll_back(started);
      throw;
    }
    for (auto& [w, thread] : joinable_) thread.detach();
    joinable_.clear();
    for (Worker* w : launch->workers) {
      if (!w->quarantined.load(std::memory_order_acquire)) continue;
      std::lock_guard<std::mutex> lock(w->mu);
      if (!w->quarantine.empty()) throw DeviceUnavailable(w->quarantine);
    }
    for (int i = 0; i < n; ++i) {
      Worker& w = *launch->workers[i];
      {
        std::lock_guard<std::mutex> lock(w.mu);
        w.queue.push_back(Task{launch, i});
      }
      if (i >= launch->woken_from) notify(w);
    }
    // A worker that was awake may have started its body while later tasks were still being
    // queued, and that body's first collective (start_all) then woke workers with nothing queued
    // yet: they went back to sleep. Wake them again now that every task is queued.
    if (launch->all_woken.load(std::memory_order_seq_cst)) wake_unwoken(*launch);
  } catch (...) {
    delete launch;
    throw;
  }
  int64_t task_ns = -1;  // what the caller's tasks took each
  if (helps) {
    const Clock::time_point start = Clock::now();
    const int ran = help(*launch, /*from_back=*/false);
    if (ran > 0) task_ns = (Clock::now() - start).count() / ran;
    complete(*launch, ran);
    // Tasks queued behind other launches' tasks are left to their workers.
    if (launch->unstarted.load(std::memory_order_acquire) > 0) start_all(launch);
  }
  wait(*launch);
  // Bodies that wait on each other need every worker whatever their time: never serial.
  if (task_ns >= 0) {
    record_task_ns(site,
                   launch->bodies_wait.load(std::memory_order_relaxed) ? kSerialBudgetNs : task_ns);
  }
  release(*launch, 1);
}

void Executor::wait(Launch& launch) {
  auto done = [&] { return launch.remaining.load(std::memory_order_acquire) == 0; };
  if (spin_then_yield(wait_policy(static_cast<int>(launch.workers.size()) + 1), done)) return;
  while (!done()) {
    const uint32_t seen = launch.events.load(std::memory_order_seq_cst);
    Verdict verdict = launch.owner.poll(launch.arg);
    if (done()) return;
    if (verdict.abandon) {
      abandon(launch, verdict);
      return;
    }
    const Clock::time_point now = Clock::now();
    const auto sleep = std::min<Clock::duration>(verdict.until - now, kIdleSleep);
    launch.caller_sleeping.store(1, std::memory_order_seq_cst);
    if (launch.events.load(std::memory_order_seq_cst) == seen && !done()) {
      futex_wait(launch.events, seen, std::chrono::duration_cast<std::chrono::nanoseconds>(sleep));
    }
    launch.caller_sleeping.store(0, std::memory_order_relaxed);
  }
}

void Executor::abandon(Launch& launch, const Verdict& verdict) {
  struct Lost {
    Launch* launch;
    int index;
  };
  std::vector<Lost> lost;
  std::string why;
  for (int index : verdict.stuck) {
    Worker& w = *launch.workers[index];
    Worker* orphan = nullptr;  // a worker whose own thread is the abandoned one
    {
      std::lock_guard<std::mutex> lock(w.mu);
      if (!w.busy || w.running.launch != &launch || w.running.index != index) continue;
      why = fmt::format(
          "UNAVAILABLE: {} is quarantined: its thread still runs {}, which did not return when "
          "that call failed; the device takes no work until that body returns.",
          w.device.str(), verdict.why);
      w.quarantine = why;
      w.quarantined.store(true, std::memory_order_release);
      w.runner->abandoned.store(true, std::memory_order_release);
      orphan = w.runner->owner;
      for (const Task& queued : w.queue) {
        if (queued.launch == &launch) continue;
        queued.launch->refs.fetch_add(1, std::memory_order_relaxed);
        lost.push_back({queued.launch, queued.index});
      }
    }
    if (orphan != nullptr) {
      std::lock_guard<std::mutex> launch_lock(launch_mu_);
      try {
        start_thread(*orphan).detach();
      } catch (const std::system_error& e) {
        std::lock_guard<std::mutex> lock(orphan->mu);
        orphan->quarantine = fmt::format(
            "UNAVAILABLE: {} has no worker thread: its thread was given up with a body that did "
            "not return, and a new one could not start ({}).",
            orphan->device.str(), e.what());
        orphan->quarantined.store(true, std::memory_order_release);
      }
    }
    for (const Lost& l : lost) {
      l.launch->owner.device_lost(l.launch->arg, l.index, why);
      wake(l.launch);
      release(*l.launch, 1);
    }
    lost.clear();
  }
}

}  // namespace spmd::internal
