// SPDX-License-Identifier: Apache-2.0
// Internal: communicators over groups of devices that span processes. Hierarchical: the members of
// one process meet in shared memory; the last of them to arrive exchanges this process's inputs
// with one such thread per other process over Gloo (TCP), then computes the outputs of every
// member of this process, visiting inputs in rank order exactly as the CPU backend does, so that a
// reduction has the same bits as in one process with the same device count.
//
// Two Gloo contexts connect the same processes. The first is Gloo's usual asynchronous one; the
// second has its connections in Gloo's synchronous mode: the thread that exchanges writes and
// reads the sockets itself, with no handshake and no hand-off through Gloo's event-loop thread
// (a 4 KiB round trip between two processes on loopback: 7 us instead of 20-90 us). Its sockets
// end a read or write at the collective timeout of the call that made the communicator, so a call
// uses them only when its own timeout is that one; otherwise it takes the first context's
// operations, which end by the calling device's deadline (processes that run the same calls with
// the same options agree on which).
//
// Before the data, the processes exchange a header (collective, dtype, sizes, the call's number
// among calls over several processes, the collective's number in the call): processes that run
// different collectives, or one that skipped a call's collectives, get CollectiveMismatch instead
// of garbage or a hang. Every header travels in an envelope of the same size, so that processes
// that disagree still exchange it; inputs of up to kInlineBytes per process travel in it too, so
// that a small collective costs one round trip.
//
// A larger all-reduce over processes that own consecutive ranks is a chain: process 0 folds its
// members' inputs and passes the running value on, each next process continues the same fold with
// its members' inputs, and the last sends the result to every other process, chunk by chunk so
// that the processes work at once. The same left fold in rank order (bit-identical), with one
// running value per link instead of every member's input. Other collectives send each process
// what its members read; messages of up to 64 KiB go over the synchronous connections.
//
// A peer that dies closes its connections, which fails the operation at once (DistributedError).
// A call that aborts destroys its communicators, which closes their connections and so wakes the
// other processes too.
//
// Members read each other's inputs only while every member of this process waits in the
// collective, so nothing needs to be kept (`keep` is unused). A shared all-reduce or all-gather
// writes its result once per process, into the first member's output, and lends it (with its
// `out_keep`) to the process's other members, which pass no output (design.md, "Lent results").
#pragma once

#include <gloo/context.h>
#include <gloo/transport/buffer.h>

#include <atomic>
#include <chrono>
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
  void* out = nullptr;  // null: a member lent the first member's result (lends())
  // all_reduce_shared / all_gather_shared: what keeps `out` alive, for the members it is lent to.
  Communicator::Keep out_keep;
};

// The state the members of this process share for one cross-process communicator.
class CrossProcessExchange {
 public:
  // `members` in rank order; `context` connects one participant per process that owns members,
  // ranked by process index; `blocking` (or null) connects the same participants in Gloo's
  // synchronous mode, its sockets made with `blocking_timeout`.
  CrossProcessExchange(std::vector<Device> members, std::shared_ptr<gloo::Context> context,
                       std::shared_ptr<gloo::Context> blocking = nullptr,
                       std::chrono::nanoseconds blocking_timeout = {});

  // Inputs of up to this many bytes per process travel with the header.
  static constexpr int64_t kInlineBytes = 16 * 1024;

  // Runs `request` for `rank`; the memory lent to it when it passed no `out`.
  Communicator::Lent run(int rank, const CollectiveRequest& request, Cancel& cancel);
  // Whether `rank` is lent the result of every non-empty shared all-reduce and all-gather: every
  // member of this process but the first, whose output the work writes once (the others share
  // its memory) instead of copying it to each.
  bool lends(int rank) const { return local_index_[rank] > 0; }
  void abort();
  bool release();

 private:
  // The last member of this process to arrive: the exchange with the other processes and every
  // local output.
  void work(Cancel& cancel);
  // Exchanges the envelopes (header, and this process's inputs of `bytes` per member when they
  // fit), and raises CollectiveMismatch when the headers differ.
  void exchange_envelopes(const CollectiveRequest& request, int64_t bytes, Cancel& cancel);
  // The envelopes' exchange itself: over blocking_ when the call's timeout is the one its sockets
  // were made with, else a Gloo allgather over context_.
  void send_envelopes(Cancel& cancel);
  // Whether every process's inputs of `bytes` per member travel in the envelopes.
  bool inlined(int64_t bytes) const;
  // Whether every process's permute sources fit in the envelopes (for a routed permute).
  bool sources_inlined() const;
  // all_to_all, reduce_scatter (rows) and permute of inputs too large for the envelopes: each
  // process sends every other only the blocks its members read (instead of gathering every input).
  void routed_rows(Cancel& cancel);
  void routed_permute(int64_t bytes, Cancel& cancel);
  // Where each process's bytes begin in `base`, back to back by Gloo rank.
  static std::vector<const char*> back_to_back(const char* base, const std::vector<int64_t>& bytes);
  // Sends each other process p out[p] bytes from from[p], and receives in[p] bytes from each,
  // back to back by Gloo rank in gathered_: over the blocking connections when the call may use
  // them and every message is small, else as Gloo's point-to-point operations.
  void send_and_receive(const std::vector<const char*>& from, const std::vector<int64_t>& out,
                        const std::vector<int64_t>& in, Cancel& cancel);
  // One message over the blocking connection to `process`: the send is written when this
  // returns; the receive has arrived.
  std::unique_ptr<gloo::transport::Buffer> blocking_send(int process, const void* data,
                                                         int64_t bytes);
  void blocking_receive(int process, void* data, int64_t bytes);
  // A large all-reduce over processes that own consecutive ranks, over the blocking connections
  // (see the top of this file).
  void chain(Cancel& cancel);
  // The outputs of this process's members but the first, except those lent the first's.
  std::vector<void*> other_outputs() const;
  char* envelope(int process) { return envelopes_.data() + process * kEnvelopeBytes; }
  void compute(const std::vector<const void*>& ins);
  [[noreturn]] void gloo_failed(const std::exception& e, const char* what, Cancel& cancel);

  const std::vector<Device> members_;
  const std::shared_ptr<gloo::Context> context_;
  const std::shared_ptr<gloo::Context> blocking_;
  const std::chrono::nanoseconds blocking_timeout_;
  bool blocking_now_ = false;  // the current collective's call may use blocking_
  // Over blocking_, by Gloo rank (null for this process): this process's envelope to each other
  // process, and each other process's envelope into its place in envelopes_.
  std::vector<std::unique_ptr<gloo::transport::Buffer>> envelope_out_, envelope_in_;
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
  // The first member's output, set by the work before it releases the others: requests_[0]
  // may be the next collective's before a lent member reads it, lent_ only after they all arrive.
  Communicator::Lent lent_;
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
  bool lends_shared_results() const override { return exchange_->lends(rank_); }
  Lent all_reduce_shared(ReduceKind op, DType dtype, int64_t count, const void* in, void* out,
                         const Keep& out_keep, const Keep&, Cancel& cancel) override;
  Lent all_gather_shared(int64_t outer, int64_t row_bytes, const void* in, void* out,
                         const Keep& out_keep, const Keep&, Cancel& cancel) override;
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
