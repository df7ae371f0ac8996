// SPDX-License-Identifier: Apache-2.0
// The "test" backend (test_backend.h).
#include "test_backend.h"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backend/element_rules.h"
#include "backend/hierarchical_communicator.h"
#include "backend/registry.h"

namespace spmd::testing {
namespace {

using internal::Cancel;
using internal::Communicator;
using internal::ConstView;
using internal::MutView;
using internal::ReduceKind;

std::atomic<long> live_buffers{0};
std::atomic<long> handles_made{0};

// Every member deposits a copy of its input; once all have, each member computes its own output
// from the deposits (in rank order, under the lock), and the round ends when all have collected.
class Mailbox {
 public:
  explicit Mailbox(int size) : size_(size), deposits_(size) {}

  // Runs one collective round for `rank`: deposits `bytes` of `in`, then calls
  // compute(deposits) once every member has deposited.
  template <class Compute>
  void round(int rank, const void* in, size_t bytes, Cancel& cancel, Compute&& compute) {
    std::unique_lock<std::mutex> lock(mu_);
    wait(lock, cancel, [&] { return collecting_ == false; });
    const char* p = static_cast<const char*>(in);
    deposits_[rank].assign(p, p + (in == nullptr ? 0 : bytes));
    if (++deposited_ == size_) {
      collecting_ = true;
      cv_.notify_all();
    } else {
      wait(lock, cancel, [&] { return collecting_; });
    }
    compute(deposits_);
    if (++collected_ == size_) {
      deposited_ = collected_ = 0;
      collecting_ = false;
      cv_.notify_all();
    }
  }

  void abort() {
    std::lock_guard<std::mutex> lock(mu_);
    aborted_ = true;
    cv_.notify_all();
  }

  bool release() {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_ || deposited_ != 0 || collecting_) return false;
    for (std::vector<char>& d : deposits_) d.clear();
    return true;
  }

 private:
  // Waits for `ready` honouring the abort flag and the caller's deadline. Cancel's throws abort
  // the call, which aborts this mailbox, so they run with the lock released.
  template <class Ready>
  void wait(std::unique_lock<std::mutex>& lock, Cancel& cancel, Ready&& ready) {
    Cancel::Clock::time_point deadline = cancel.deadline();
    while (!ready()) {
      if (aborted_) {
        lock.unlock();
        cancel.throw_aborted();
      }
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && !aborted_) {
        lock.unlock();
        cancel.deadline_passed();  // throws, or moves the deadline
        lock.lock();
        deadline = cancel.deadline();
      }
    }
  }

  const int size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::vector<char>> deposits_;
  int deposited_ = 0;
  int collected_ = 0;
  bool collecting_ = false;
  bool aborted_ = false;
};

// out[i] = in_0[i] op in_1[i] op ... over `ins` (each at byte `offset`), in the order given.
void fold(ReduceKind op, DType dtype, const std::vector<const char*>& ins, size_t offset,
          int64_t count, void* out) {
  internal::dispatch(dtype, [&]<class T>(std::type_identity<T>) {
    using S = internal::StorageOf<T>;
    auto apply = [op](auto a, auto b) {
      switch (op) {
        case ReduceKind::kSum:
          return internal::SumRule::apply(a, b);
        case ReduceKind::kMax:
          return internal::MaxRule::apply(a, b);
        case ReduceKind::kMin:
          break;
      }
      return internal::MinRule::apply(a, b);
    };
    for (int64_t i = 0; i < count; ++i) {
      auto acc = internal::load<T>(reinterpret_cast<const S*>(ins[0] + offset) + i);
      for (size_t q = 1; q < ins.size(); ++q) {
        acc = apply(acc, internal::load<T>(reinterpret_cast<const S*>(ins[q] + offset) + i));
      }
      internal::store<T>(static_cast<S*>(out) + i, acc);
    }
  });
}

std::vector<const char*> pointers(const std::vector<std::vector<char>>& deposits) {
  std::vector<const char*> out;
  for (const std::vector<char>& d : deposits) out.push_back(d.data());
  return out;
}

class MailboxCommunicator final : public Communicator {
 public:
  MailboxCommunicator(std::shared_ptr<Mailbox> mailbox, int rank, int size)
      : mailbox_(std::move(mailbox)), rank_(rank), size_(size) {}

  void all_reduce(ReduceKind op, DType dtype, int64_t count, const void* in, void* out, const Keep&,
                  Cancel& cancel) override {
    mailbox_->round(rank_, in, count * itemsize(dtype), cancel, [&](const auto& deposits) {
      fold(op, dtype, pointers(deposits), 0, count, out);
    });
  }
  void reduce_scatter(ReduceKind op, DType dtype, int64_t outer, int64_t inner, const void* in,
                      void* out, const Keep&, Cancel& cancel) override {
    const size_t item = itemsize(dtype);
    mailbox_->round(rank_, in, outer * size_ * inner * item, cancel, [&](const auto& deposits) {
      for (int64_t o = 0; o < outer; ++o) {
        fold(op, dtype, pointers(deposits), ((o * size_ + rank_) * inner) * item, inner,
             static_cast<char*>(out) + o * inner * item);
      }
    });
  }
  void all_gather(int64_t outer, int64_t row_bytes, const void* in, void* out, const Keep&,
                  Cancel& cancel) override {
    mailbox_->round(rank_, in, outer * row_bytes, cancel, [&](const auto& deposits) {
      if (outer * row_bytes == 0) return;  // (an empty array may have no memory: null pointers)
      for (int64_t o = 0; o < outer; ++o) {
        for (int q = 0; q < size_; ++q) {
          std::memcpy(static_cast<char*>(out) + (o * size_ + q) * row_bytes,
                      deposits[q].data() + o * row_bytes, row_bytes);
        }
      }
    });
  }
  void all_to_all(int64_t chunk_bytes, const void* in, void* out, const Keep&,
                  Cancel& cancel) override {
    mailbox_->round(rank_, in, size_ * chunk_bytes, cancel, [&](const auto& deposits) {
      if (chunk_bytes == 0) return;  // (as above)
      for (int q = 0; q < size_; ++q) {
        std::memcpy(static_cast<char*>(out) + q * chunk_bytes,
                    deposits[q].data() + rank_ * chunk_bytes, chunk_bytes);
      }
    });
  }
  void permute(int src, int64_t bytes, const void* in, void* out, const Keep&,
               Cancel& cancel) override {
    mailbox_->round(rank_, in, bytes, cancel, [&](const auto& deposits) {
      if (bytes == 0) return;  // (an empty array may have no memory: null pointers)
      if (src < 0) {
        std::memset(out, 0, bytes);
      } else {
        std::memcpy(out, deposits[src].data(), bytes);
      }
    });
  }
  void barrier(Cancel& cancel) override {
    mailbox_->round(rank_, nullptr, 0, cancel, [](const auto&) {});
  }
  void abort() override { mailbox_->abort(); }
  bool release() override { return mailbox_->release(); }

 private:
  std::shared_ptr<Mailbox> mailbox_;
  int rank_;
  int size_;
};

class TestBackend final : public internal::Backend {
 public:
  Platform platform() const override { return kTestPlatform; }
  int device_count() const override {
    const char* text = std::getenv("SPMD_TEST_BACKEND_DEVICES");
    return text != nullptr ? std::atoi(text) : 8;
  }
  std::string more_devices_advice(int64_t wanted) const override {
    return "SPMD_TEST_BACKEND_DEVICES=" + std::to_string(wanted);
  }
  void* allocate(const Device& device, size_t bytes) override {
    internal::check_host_memory(device, bytes);
    size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr) throw std::bad_alloc();
    std::memset(p, 0xA5, rounded);  // never zero: a kernel that reads before writing shows up
    live_buffers.fetch_add(1);
    return p;
  }
  void deallocate(const Device&, void* data, size_t) override {
    live_buffers.fetch_sub(1);
    std::free(data);
  }
  bool can_alias(const Device& owner, const Device& reader) const override {
    return owner == reader;
  }
  void to_host(const Device&, const void* src, void* dst, size_t bytes) const override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void from_host(const Device&, const void* src, void* dst, size_t bytes) const override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy(const Device&, const ConstView& src, const Device& to,
            const MutView& dst) const override {
    kernels(to).copy(src, dst);
  }
  const internal::Kernels& kernels(const Device&) const override {
    return internal::backend_for(Platform::kCpu).kernels(Device{});
  }
  std::unique_ptr<Communicator> make_communicator(const std::vector<Device>& members, int rank,
                                                  internal::Rendezvous& rendezvous,
                                                  Cancel& cancel) override {
    const int size = static_cast<int>(members.size());
    std::vector<int> node_of;
    for (const Device& m : members) node_of.push_back(m.id / devices_per_node_);
    const internal::NodeLayout layout(node_of);
    if (layout.mixed()) {
      return internal::make_hierarchical_communicator(*this, members, layout, rank, rendezvous,
                                                      cancel);
    }
    auto mailbox = rendezvous.shared<Mailbox>([size] { return std::make_shared<Mailbox>(size); });
    handles_made.fetch_add(1);
    return std::make_unique<MailboxCommunicator>(std::move(mailbox), rank, size);
  }

 private:
  static int devices_per_node() {
    const char* text = std::getenv("SPMD_TEST_BACKEND_DEVICES_PER_NODE");
    return text != nullptr && std::atoi(text) > 0 ? std::atoi(text) : 1;
  }

  const int devices_per_node_ = devices_per_node();
};

const bool registered = [] {
  internal::register_backend({.platform = kTestPlatform, .preference = -100, .create = [] {
                                return std::make_unique<TestBackend>();
                              }});
  return true;
}();

}  // namespace

long test_backend_live_buffers() { return live_buffers.load(); }
long test_backend_handles_made() { return handles_made.load(); }

}  // namespace spmd::testing
