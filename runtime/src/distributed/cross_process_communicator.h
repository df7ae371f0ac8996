// SPDX-License-Identifier: Apache-2.0
// Internal: communicators over groups of devices that span processes. Hierarchical: the members of
// one process meet in shared memory; the last of them to arrive exchanges this process's inputs
// with one such thread per other process over Gloo (TCP), then computes the outputs of every
// member of this process, visiting inputs in rank order exactly as the CPU backend does, so that a
// reduction has the same bits as in one process with the same device count.
//
// A large all-reduce over processes that own consecutive ranks is a chain instead: process 0
// folds its members' inputs and passes the running value on, each next process continues the same
// fold with its members' inputs, and the last sends the result to every other process, chunk by
// chunk so that the processes work at once. The same left fold in rank order (bit-identical),
// with one running value per link instead of every member's input.
//
// Before the data, the processes exchange a header (collective, dtype, sizes, the call's number
// among calls over several processes, the collective's number in the call): processes that run
// different collectives, or one that skipped a call's collectives, get CollectiveMismatch instead
// of garbage or a hang. Every header travels in an envelope of the same size, so that processes
// that disagree still exchange it; inputs of up to kInlineBytes per process travel in it too, so
// that a small collective costs one round trip.
// Every Gloo operation ends by the calling device's deadline; a peer that dies closes its
// connections, which fails the operation at once (DistributedError). A call that aborts destroys
// its communicators, which closes their connections and so wakes the other processes too.
//
// Members read each other's inputs only while every member of this process waits in the
// collective, so nothing needs to be kept (`keep` is unused).
#pragma once

#include <gloo/context.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "backend/backend.h"

namespace spmd::internal {

// What one member asks of a collective.
struct CollectiveRequest {
  enum Kind : int64_t { kAllReduce, kReduceScatter, kAllGather, kAllToAll, kPermute, kBarrier };
  Kind kind = kBarrier;
  ReduceKind op = ReduceKind::kSum;
  DType dtype = DType::kFloat32;
  int64_t a = 0, b = 0;  // count | outer, inner | outer, row_bytes | chunk_bytes | bytes
  int src = -1;          // permute's source rank
  const void* in = nullptr;
  void* out = nullptr;
};

// The state the members of this process share for one cross-process communicator.
class CrossProcessExchange {
 public:
  // `members` in rank order; `context` connects one participant per process that owns members,
  // ranked by process index.
  CrossProcessExchange(std::vector<Device> members, std::shared_ptr<gloo::Context> context);

  // Inputs of up to this many bytes per process travel with the header.
  static constexpr int64_t kInlineBytes = 16 * 1024;

  void run(int rank, const CollectiveRequest& request, Cancel& cancel);
  void abort();
  bool release();

 private:
  // The last member of this process to arrive: the exchange with the other processes and every
  // local output.
  void work(Cancel& cancel);
  // Exchanges the envelopes (header, and this process's inputs of `bytes` per member when they
  // fit), and raises CollectiveMismatch when the headers differ.
  void exchange_envelopes(const CollectiveRequest& request, int64_t bytes, Cancel& cancel);
  // Whether every process's inputs of `bytes` per member travel in the envelopes.
  bool inlined(int64_t bytes) const;
  // Whether every process's permute sources fit in the envelopes (for a routed permute).
  bool sources_inlined() const;
  // all_to_all, reduce_scatter (rows) and permute of inputs too large for the envelopes: each
  // process sends every other only the blocks its members read (instead of gathering every input).
  void routed_rows(Cancel& cancel);
  void routed_permute(int64_t bytes, Cancel& cancel);
  // Where each process's blocks begin in gathered_, received back to back (this process: none).
  std::vector<const char*> regions(const std::vector<int64_t>& in) const;
  // Sends to and receives from each other process the sizes given (by Gloo rank; staging_ holds
  // what goes out back to back, gathered_ receives back to back).
  void send_and_receive(const std::vector<int64_t>& out, const std::vector<int64_t>& in,
                        Cancel& cancel);
  char* envelope(int process) { return envelopes_.data() + process * kEnvelopeBytes; }
  void compute(const std::vector<const void*>& ins);
  void chained_all_reduce(Cancel& cancel);
  [[noreturn]] void gloo_failed(const std::exception& e, const char* what, Cancel& cancel);

  const std::vector<Device> members_;
  const std::shared_ptr<gloo::Context> context_;
  std::vector<int> local_ranks_;                 // ranks of this process's members, ascending
  std::vector<int> local_index_;                 // rank -> index in local_ranks_, or -1
  std::vector<std::vector<int>> process_ranks_;  // Gloo rank -> the ranks it owns, ascending
  std::vector<int> process_of_;                  // Gloo rank -> process index
  std::vector<int> owner_of_;                    // rank -> the Gloo rank that owns it
  std::vector<int> index_in_owner_;              // rank -> its index in process_ranks_[owner]
  bool chainable_ = false;                     // each process's ranks follow the previous process's
  static constexpr int64_t kHeaderBytes = 64;  // an envelope's header part; its inputs follow
  static constexpr int64_t kEnvelopeBytes = kHeaderBytes + kInlineBytes;

  std::mutex mu_;
  std::condition_variable cv_;
  bool aborted_ = false;
  int arrived_ = 0;
  // Completed collectives: written under mu_, read without it by members spinning before they
  // sleep.
  std::atomic<uint64_t> generation_{0};
  uint64_t call_ = 0;                        // the cross-process call of the last collective
  uint64_t in_call_ = 0;                     // collectives of that call so far
  std::vector<CollectiveRequest> requests_;  // by local index, for the current collective
  // This process's inputs and everyone's; in the chain, the running values sent and received.
  std::vector<char> staging_, gathered_;
  // Every process's envelope, by Gloo rank, then the one this process sends.
  std::vector<char> envelopes_;
};

// One rank's handle.
class CrossProcessCommunicator final : public Communicator {
 public:
  CrossProcessCommunicator(std::shared_ptr<CrossProcessExchange> exchange, int rank)
      : exchange_(std::move(exchange)), rank_(rank) {}

  void all_reduce(ReduceKind op, DType dtype, int64_t count, const void* in, void* out, const Keep&,
                  Cancel& cancel) override;
  void reduce_scatter(ReduceKind op, DType dtype, int64_t outer, int64_t inner, const void* in,
                      void* out, const Keep&, Cancel& cancel) override;
  void all_gather(int64_t outer, int64_t row_bytes, const void* in, void* out, const Keep&,
                  Cancel& cancel) override;
  void all_to_all(int64_t chunk_bytes, const void* in, void* out, const Keep&,
                  Cancel& cancel) override;
  void permute(int src, int64_t bytes, const void* in, void* out, const Keep&,
               Cancel& cancel) override;
  void barrier(Cancel& cancel) override;
  void abort() override { exchange_->abort(); }
  bool release() override { return exchange_->release(); }

 private:
  std::shared_ptr<CrossProcessExchange> exchange_;
  int rank_;
};

}  // namespace spmd::internal
