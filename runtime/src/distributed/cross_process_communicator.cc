// SPDX-License-Identifier: Apache-2.0
// Hierarchical collectives across processes (cross_process_communicator.h).
#include "distributed/cross_process_communicator.h"

#include <fmt/format.h>
#include <gloo/allgather.h>
#include <gloo/common/error.h>
#include <gloo/transport/unbound_buffer.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <numeric>
#include <type_traits>

#include "backend/element_rules.h"
#include "backend/host_fold.h"
#include "exec/futex.h"
#include "spmd/errors.h"

namespace spmd::internal {
namespace {

using Clock = Cancel::Clock;

// The slots of the buffers on the blocking connections: the envelopes', and those made for one
// message (at most one per connection and direction at a time).
constexpr int kEnvelopeSlot = 0;
constexpr int kMessageSlot = 1;
constexpr int kPartialSlot = 2;  // the chain's running values
constexpr int kResultSlot = 3;   // the chain's result

// Messages of up to this many bytes go over the blocking connections both ways at once: each
// fits the sockets' buffers, so a write never waits for the peer's read.
constexpr int64_t kBlockingMessageBytes = 64 * 1024;

// The chain (CrossProcessExchange::chain) passes its values on in chunks, so that the processes
// fold, send and receive at once: a quarter of the values, within these bounds (small chunks
// pipeline a mid-sized all-reduce; each chunk costs a wake-up per link). A process that passes
// running values on reads the result of chunk c - kChainLag after it sent chunk c. Lock step
// bounds what waits unread in a socket to kChainLag + 1 chunks, which its buffers hold: no write
// waits on a read that waits on it.
constexpr int64_t kChainMinChunkBytes = 64 * 1024;
constexpr int64_t kChainMaxChunkBytes = 256 * 1024;
constexpr int64_t kChainLag = 1;

// Where a fold starts and what it writes: the CPU backend's reduction order and element rules,
// so that the bits match a single-process run. A fold over several processes passes its running
// value on in the compute type (float for float16/bfloat16), never rounded to the storage type.
struct FoldSpan {
  const void* partial = nullptr;  // compute-type values to start from, else ins[0]
  int64_t begin = 0;              // first element, in ins, partial and out
  int64_t count = 0;
  bool out_partial = false;  // write compute-type values (to pass on), else storage values
  // Storage values only: more outputs that get the same values, copied block by block while they
  // are in cache (an all-reduce's other local members).
  const std::vector<void*>* copies = nullptr;
};

// out[i] = ((start[i] op ins[0][i]) op ins[1][i]) ... for i in the span, start being partial[i],
// or without it. Compute-type outputs, and storage types computed as themselves, are folded in
// place; half types in a float block, rounded once.
template <class T, class Rule>
void fold_typed(const std::vector<const void*>& ins, void* out, const FoldSpan& span) {
  constexpr int64_t kBlock = 1024;
  constexpr bool kInPlace = std::is_same_v<ComputeOf<T>, StorageOf<T>>;
  ComputeOf<T> staging[kBlock];
  const auto* const* in = reinterpret_cast<const StorageOf<T>* const*>(ins.data());
  const int n = static_cast<int>(ins.size());
  for (int64_t b = span.begin; b < span.begin + span.count; b += kBlock) {
    const int64_t len = std::min(kBlock, span.begin + span.count - b);
    auto* dst = static_cast<StorageOf<T>*>(out) + b;
    ComputeOf<T>* acc = staging;
    if (span.out_partial) {
      acc = static_cast<ComputeOf<T>*>(out) + b;
    } else if constexpr (kInPlace) {
      acc = dst;
    }
    if (span.partial) {
      std::memcpy(acc, static_cast<const ComputeOf<T>*>(span.partial) + b, len * sizeof(acc[0]));
    }
    fold_inputs<T, Rule>(acc, in, n, b, len, span.partial == nullptr);
    if (span.out_partial) continue;
    if constexpr (!kInPlace) {
      for (int64_t i = 0; i < len; ++i) store<T>(&dst[i], acc[i]);
    }
    for (size_t k = 0; span.copies && k < span.copies->size(); ++k) {
      std::memcpy(static_cast<StorageOf<T>*>((*span.copies)[k]) + b, dst, len * sizeof(dst[0]));
    }
  }
}

template <class Rule>
void fold_rule(DType dtype, const std::vector<const void*>& ins, void* out, const FoldSpan& span) {
  dispatch(dtype, [&]<class T>(std::type_identity<T>) { fold_typed<T, Rule>(ins, out, span); });
}

void fold(ReduceKind op, DType dtype, const std::vector<const void*>& ins, void* out,
          const FoldSpan& span) {
  switch (op) {
    case ReduceKind::kSum:
      return fold_rule<SumRule>(dtype, ins, out, span);
    case ReduceKind::kMax:
      return fold_rule<MaxRule>(dtype, ins, out, span);
    case ReduceKind::kMin:
      return fold_rule<MinRule>(dtype, ins, out, span);
  }
}

void fold(ReduceKind op, DType dtype, const std::vector<const void*>& ins, void* out, int64_t count,
          const std::vector<void*>* copies = nullptr) {
  fold(op, dtype, ins, out, FoldSpan{.count = count, .copies = copies});
}

// The size of the type a fold accumulates `dtype` in.
int64_t compute_size(DType dtype) {
  int64_t size = 0;
  dispatch(dtype, [&]<class T>(std::type_identity<T>) { size = sizeof(ComputeOf<T>); });
  return size;
}

// How many input bytes each member contributes.
int64_t input_bytes(const CollectiveRequest& r, int size) {
  const int64_t item = itemsize(r.dtype);
  switch (r.kind) {
    case CollectiveRequest::kAllReduce:
      return r.a * item;
    case CollectiveRequest::kReduceScatter:
      return r.a * size * r.b * item;
    case CollectiveRequest::kAllGather:
      return r.a * r.b;
    case CollectiveRequest::kAllToAll:
      return size * r.a;
    case CollectiveRequest::kPermute:
      return r.a;
    case CollectiveRequest::kBarrier:
      return 0;
  }
  return 0;
}

// The header each process sends before the data: what it runs, as collective number `seq` of
// cross-process call number `call`.
struct Header {
  int64_t kind, op, dtype, a, b, call, seq;
  uint64_t signature;  // Cancel::collective_hash()
  bool operator==(const Header&) const = default;
};

Header header_of(const CollectiveRequest& r, uint64_t call, uint64_t seq, uint64_t signature) {
  const bool typed =
      r.kind == CollectiveRequest::kAllReduce || r.kind == CollectiveRequest::kReduceScatter;
  return Header{r.kind,
                typed ? static_cast<int64_t>(r.op) : 0,
                typed ? static_cast<int64_t>(r.dtype) : 0,
                r.a,
                r.b,
                static_cast<int64_t>(call),
                static_cast<int64_t>(seq),
                signature};
}

std::string describe(const Header& h) {
  static const char* const kKinds[] = {"all_reduce", "reduce_scatter", "all_gather",
                                       "all_to_all", "permute",        "barrier"};
  static const char* const kOps[] = {"sum", "max", "min"};
  const char* kind = h.kind >= 0 && h.kind < 6 ? kKinds[h.kind] : "?";
  switch (h.kind) {
    case CollectiveRequest::kAllReduce:
      return fmt::format("{} ({}) of {} {} elements", kind, kOps[h.op % 3],
                         static_cast<int64_t>(h.a), dtype_name(static_cast<DType>(h.dtype)));
    case CollectiveRequest::kReduceScatter:
      return fmt::format("{} ({}) of {} {}", kind, kOps[h.op % 3],
                         dtype_name(static_cast<DType>(h.dtype)),
                         fmt::format("[{} x size x {}]", h.a, h.b));
    case CollectiveRequest::kBarrier:
      return kind;
    default:
      return fmt::format("{} of {} bytes", kind,
                         h.kind == CollectiveRequest::kAllGather ? h.a * h.b : h.a);
  }
}

std::chrono::milliseconds time_left(Cancel& cancel) {
  auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(cancel.deadline() - Clock::now());
  return std::max(left, std::chrono::milliseconds(1));
}

}  // namespace

CrossProcessExchange::CrossProcessExchange(std::vector<Device> members,
                                           std::shared_ptr<gloo::Context> context,
                                           std::shared_ptr<gloo::Context> blocking,
                                           std::chrono::nanoseconds blocking_timeout)
    : members_(std::move(members)),
      context_(std::move(context)),
      blocking_(std::move(blocking)),
      blocking_timeout_(blocking_timeout) {
  const int size = static_cast<int>(members_.size());
  local_index_.assign(size, -1);
  std::map<int, std::vector<int>> by_process;
  for (int r = 0; r < size; ++r) by_process[members_[r].process_index].push_back(r);
  const int me = context_ ? context_->rank : 0;
  owner_of_.resize(size);
  index_in_owner_.resize(size);
  for (const auto& [process, ranks] : by_process) {
    for (size_t j = 0; j < ranks.size(); ++j) {
      owner_of_[ranks[j]] = static_cast<int>(process_of_.size());
      index_in_owner_[ranks[j]] = static_cast<int>(j);
    }
    process_of_.push_back(process);
    process_ranks_.push_back(ranks);
  }
  for (int r : process_ranks_[me]) {
    local_index_[r] = static_cast<int>(local_ranks_.size());
    local_ranks_.push_back(r);
  }
  requests_.resize(local_ranks_.size());
  const int processes = context_ ? context_->size : 1;
  envelopes_.resize((processes + 1) * kEnvelopeBytes);  // never again: the buffers point into it
  if (blocking_) {
    envelope_out_.resize(processes);
    envelope_in_.resize(processes);
    for (int p = 0; p < processes; ++p) {
      if (p == me) continue;
      const std::unique_ptr<gloo::transport::Pair>& pair = blocking_->getPair(p);
      envelope_out_[p] = pair->createSendBuffer(kEnvelopeSlot, envelope(processes), kEnvelopeBytes);
      envelope_in_[p] = pair->createRecvBuffer(kEnvelopeSlot, envelope(p), kEnvelopeBytes);
    }
  }
  // The chain needs the fold order to visit the processes one after the other.
  int next = 0;
  chainable_ = true;
  for (const std::vector<int>& ranks : process_ranks_) {
    for (int r : ranks) chainable_ = chainable_ && r == next++;
  }
}

Communicator::Lent CrossProcessExchange::run(int rank, const CollectiveRequest& request,
                                             Cancel& cancel) {
  std::unique_lock<std::mutex> lock(mu_);
  if (aborted_) {
    // Not under mu_: throw_aborted takes the call's lock, which abort() holds when it takes mu_.
    lock.unlock();
    cancel.throw_aborted();
  }
  requests_[local_index_[rank]] = request;
  const uint64_t generation = generation_.load(std::memory_order_relaxed);
  if (++arrived_ == static_cast<int>(local_ranks_.size())) {
    // The last to arrive works for every member of this process; the others wait for it.
    lock.unlock();
    work(cancel);
    lock.lock();
    lent_ = {requests_[0].out_keep, requests_[0].out};
    arrived_ = 0;
    generation_.fetch_add(1, std::memory_order_release);
    cv_.notify_all();
    return request.out ? Communicator::Lent{} : lent_;
  }
  // Spin or yield first, as the CPU backend's members do: a member that sleeps at once makes
  // every exchange pay a futex wake-up, and on a virtual machine the wake-up of an idle core.
  lock.unlock();
  spin_then_yield(wait_policy(cancel.threads()),
                  [&] { return generation_.load(std::memory_order_acquire) != generation; });
  lock.lock();
  Clock::time_point deadline = cancel.deadline();
  while (generation_ == generation && !aborted_) {
    if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && generation_ == generation &&
        !aborted_) {
      lock.unlock();
      cancel.deadline_passed();  // throws, or moves the deadline
      deadline = cancel.deadline();
      lock.lock();
    }
  }
  if (generation_ == generation) {
    lock.unlock();
    cancel.throw_aborted();
  }
  return request.out ? Communicator::Lent{} : lent_;
}

void CrossProcessExchange::gloo_failed(const std::exception& e, const char* what, Cancel& cancel) {
  if (cancel.aborted()) cancel.throw_aborted();
  const std::string text = e.what();
  std::string processes;
  for (size_t p = 0; p < process_of_.size(); ++p) {
    if (static_cast<int>(p) == context_->rank) continue;
    processes += fmt::format("{}{}", processes.empty() ? "" : ", ", process_of_[p]);
  }
  const char* plural = process_of_.size() > 2 ? "es" : "";
  // Gloo's deadline is the call's (a deadline that moved later cannot resume a half-done Gloo
  // operation): the other processes are alive, for their connections are open, but did not send.
  if (text.find("imed out") != std::string::npos || text.find("timeout") != std::string::npos) {
    throw CollectiveTimeout(fmt::format(
        "the {} with process{} {} did not complete within {:g} s ({}): the other process{} did "
        "not reach this collective in time, alive but busy or stuck (a long step, a collective "
        "under process-dependent control flow). To change the deadline, set "
        "SPMD_COLLECTIVE_TIMEOUT_S, InitOptions::collective_timeout_s or "
        "ShardMapOptions::collective_timeout_s.",
        what, plural, processes, std::chrono::duration<double>(cancel.collective_timeout()).count(),
        text, plural));
  }
  throw DistributedError(fmt::format(
      "the {} with process{} {} failed: {}. Another process of the run has died, exited or "
      "aborted this collective (the launcher, spmd-run, names the process that failed first).",
      what, plural, processes, text));
}

void CrossProcessExchange::exchange_envelopes(const CollectiveRequest& request, int64_t bytes,
                                              Cancel& cancel) {
  if (cancel.cross_process_call() != call_) {
    call_ = cancel.cross_process_call();
    in_call_ = 0;
  }
  const Header mine = header_of(request, call_, ++in_call_, cancel.collective_hash());
  static_assert(sizeof(Header) <= kHeaderBytes);
  const int processes = context_->size;
  char* outgoing = envelope(processes);
  std::memcpy(outgoing, &mine, sizeof(mine));
  if (bytes > 0 && inlined(bytes)) {
    for (size_t i = 0; i < local_ranks_.size(); ++i) {
      std::memcpy(outgoing + kHeaderBytes + i * bytes, requests_[i].in, bytes);
    }
  } else if (request.kind == CollectiveRequest::kPermute && sources_inlined()) {
    for (size_t i = 0; i < local_ranks_.size(); ++i) {
      const int32_t src = requests_[i].src;
      std::memcpy(outgoing + kHeaderBytes + i * sizeof(src), &src, sizeof(src));
    }
  }
  send_envelopes(cancel);
  std::vector<Header> all(processes);
  for (int p = 0; p < processes; ++p) std::memcpy(&all[p], envelope(p), sizeof(Header));
  bool agree = true;
  for (const Header& h : all) agree = agree && h == all[0];
  if (agree) return;
  // Every process sees the same headers, so all of them take this path: exchange what each runs,
  // in words, for the message.
  constexpr size_t kText = 256;
  std::string text = cancel.describe_collective();
  if (text.empty()) text = describe(mine);
  text.resize(kText, '\0');
  text.back() = '\0';
  std::vector<char> texts(kText * all.size());
  try {
    gloo::AllgatherOptions opts(context_);
    opts.setInput(text.data(), kText);
    opts.setOutput(texts.data(), texts.size());
    opts.setTimeout(time_left(cancel));
    gloo::allgather(opts);
  } catch (const gloo::Exception& e) {
    gloo_failed(e, "exchange of mismatched collectives", cancel);
  }
  std::string ran;
  for (size_t p = 0; p < all.size(); ++p) {
    ran += fmt::format(
        "{}process {} ran {} as collective #{} of its mapped call #{} over several "
        "processes",
        p == 0 ? "" : "; ", process_of_[p], texts.data() + p * kText, all[p].seq, all[p].call);
  }
  throw CollectiveMismatch(fmt::format(
      "processes ran different collectives over devices {}: {}. Every process must make the same "
      "mapped calls over meshes that span processes, in the same order, and every device must "
      "run the same collectives in the same order, with the same dtypes, shapes and axes (SPMD): "
      "look for a call or a collective under process-dependent control flow (process_index, data "
      "read from files).",
      fmt::join(members_, ", "), ran));
}

void CrossProcessExchange::send_envelopes(Cancel& cancel) {
  const int processes = context_->size;
  try {
    if (blocking_now_) {
      // Each socket holds at most two envelopes (a process sends the next only after it received
      // every process's current one), far below its buffers: the writes never wait on a read.
      for (const auto& out : envelope_out_) {
        if (out) out->send();
      }
      for (const auto& in : envelope_in_) {
        if (in) in->waitRecv();
      }
      for (const auto& out : envelope_out_) {
        if (out) out->waitSend();
      }
      // This process's own inputs and permute sources are read in place: its header is all that
      // is needed.
      std::memcpy(envelope(context_->rank), envelope(processes), kHeaderBytes);
      return;
    }
    gloo::AllgatherOptions opts(context_);
    opts.setInput(envelope(processes), kEnvelopeBytes);
    opts.setOutput(envelopes_.data(), processes * kEnvelopeBytes);
    opts.setTimeout(time_left(cancel));
    gloo::allgather(opts);
  } catch (const gloo::Exception& e) {
    gloo_failed(e, "exchange of collective headers", cancel);
  }
}

void CrossProcessExchange::work(Cancel& cancel) {
  const CollectiveRequest& first = requests_[0];
  const int size = static_cast<int>(members_.size());
  const int64_t bytes = input_bytes(first, size);
  blocking_now_ = blocking_ && cancel.collective_timeout() == blocking_timeout_;
  exchange_envelopes(first, bytes, cancel);
  if (first.kind == CollectiveRequest::kBarrier) return;
  const bool inline_data = bytes > 0 && inlined(bytes);
  if (first.kind == CollectiveRequest::kAllReduce && chainable_ && blocking_now_ && bytes > 0 &&
      !inline_data) {
    return chain(cancel);
  }
  std::vector<const void*> ins(size);
  if (inline_data) {
    for (size_t p = 0; p < process_ranks_.size(); ++p) {
      const char* payload = envelope(static_cast<int>(p)) + kHeaderBytes;
      for (size_t i = 0; i < process_ranks_[p].size(); ++i) {
        const int r = process_ranks_[p][i];
        ins[r] = local_index_[r] >= 0 ? requests_[local_index_[r]].in : payload + i * bytes;
      }
    }
    return compute(ins);
  }
  if (bytes > 0 && first.kind == CollectiveRequest::kPermute && sources_inlined()) {
    return routed_permute(bytes, cancel);
  }
  if (bytes > 0 && (first.kind == CollectiveRequest::kAllToAll ||
                    first.kind == CollectiveRequest::kReduceScatter)) {
    return routed_rows(cancel);
  }

  // Everyone's inputs: this process's read in place, the others' received from each process.
  const int processes = context_->size, me = context_->rank;
  const int64_t local_bytes = static_cast<int64_t>(local_ranks_.size()) * bytes;
  std::vector<int64_t> out_bytes(processes, 0), in_bytes(processes, 0);
  for (int p = 0; p < processes; ++p) {
    if (p == me) continue;
    out_bytes[p] = local_bytes;
    in_bytes[p] = static_cast<int64_t>(process_ranks_[p].size()) * bytes;
  }
  staging_.resize(local_bytes);
  for (size_t i = 0; i < local_ranks_.size(); ++i) {
    if (bytes > 0) std::memcpy(staging_.data() + i * bytes, requests_[i].in, bytes);
  }
  send_and_receive(std::vector<const char*>(processes, staging_.data()), out_bytes, in_bytes,
                   cancel);
  std::vector<const char*> region = back_to_back(gathered_.data(), in_bytes);
  for (int p = 0; p < processes; ++p) {
    for (size_t i = 0; i < process_ranks_[p].size(); ++i) {
      const int r = process_ranks_[p][i];
      ins[r] = p == me ? requests_[local_index_[r]].in : region[p] + i * bytes;
    }
  }
  compute(ins);
}

bool CrossProcessExchange::inlined(int64_t bytes) const {
  for (const std::vector<int>& ranks : process_ranks_) {
    if (static_cast<int64_t>(ranks.size()) * bytes > kInlineBytes) return false;
  }
  return true;
}

bool CrossProcessExchange::sources_inlined() const {
  for (const std::vector<int>& ranks : process_ranks_) {
    if (static_cast<int64_t>(ranks.size() * sizeof(int32_t)) > kInlineBytes) return false;
  }
  return true;
}

void CrossProcessExchange::routed_rows(Cancel& cancel) {
  const CollectiveRequest& first = requests_[0];
  const int processes = context_->size, me = context_->rank;
  const int size = static_cast<int>(members_.size());
  const int64_t mine = static_cast<int64_t>(local_ranks_.size());
  // Both are rows of a member's input, row (o, m) going to member m: all_to_all's chunks (one
  // outer row) and reduce_scatter's blocks. Process p sends q, for each of its ranks r, each o
  // and each rank m of q, row (o, m) of r's input.
  const bool scatter = first.kind == CollectiveRequest::kReduceScatter;
  const int64_t outer = scatter ? first.a : 1;
  const int64_t row = scatter ? first.b * itemsize(first.dtype) : first.a;
  std::vector<int64_t> out_bytes(processes, 0), in_bytes(processes, 0);
  for (int q = 0; q < processes; ++q) {
    if (q == me) continue;
    const int64_t theirs = static_cast<int64_t>(process_ranks_[q].size());
    out_bytes[q] = mine * outer * theirs * row;
    in_bytes[q] = theirs * outer * mine * row;
  }
  staging_.resize(std::accumulate(out_bytes.begin(), out_bytes.end(), int64_t{0}));
  char* put = staging_.data();
  for (int q = 0; q < processes; ++q) {
    for (int64_t i = 0; q != me && i < mine; ++i) {
      for (int64_t o = 0; o < outer; ++o) {
        for (int m : process_ranks_[q]) {
          std::memcpy(put, static_cast<const char*>(requests_[i].in) + (o * size + m) * row, row);
          put += row;
        }
      }
    }
  }
  send_and_receive(back_to_back(staging_.data(), out_bytes), out_bytes, in_bytes, cancel);
  std::vector<const char*> region = back_to_back(gathered_.data(), in_bytes);
  // Row (o, m) of member q's input, for this process's member i (rank m).
  auto row_of = [&](int q, int64_t o, int64_t i) {
    const int p = owner_of_[q];
    if (p == me) {
      return static_cast<const char*>(requests_[local_index_[q]].in) +
             (o * size + local_ranks_[i]) * row;
    }
    return region[p] + ((index_in_owner_[q] * outer + o) * mine + i) * row;
  };
  std::vector<const void*> rows(size);
  for (int64_t i = 0; i < mine; ++i) {
    char* dst = static_cast<char*>(requests_[i].out);
    for (int64_t o = 0; o < outer; ++o) {
      for (int q = 0; q < size; ++q) rows[q] = row_of(q, o, i);
      if (scatter) {
        fold(first.op, first.dtype, rows, dst + o * row, first.b);
        continue;
      }
      for (int q = 0; q < size; ++q) std::memcpy(dst + q * row, rows[q], row);
    }
  }
}

void CrossProcessExchange::routed_permute(int64_t bytes, Cancel& cancel) {
  const int processes = context_->size, me = context_->rank;
  // Every member's source, from the envelopes.
  std::vector<int32_t> src(members_.size(), -1);
  for (int p = 0; p < processes; ++p) {
    const char* payload = envelope(p) + kHeaderBytes;
    for (size_t i = 0; i < process_ranks_[p].size(); ++i) {
      if (p == me) {
        src[process_ranks_[p][i]] = requests_[i].src;
      } else {
        std::memcpy(&src[process_ranks_[p][i]], payload + i * sizeof(int32_t), sizeof(int32_t));
      }
    }
  }
  // The ranks of process `from` whose inputs a member of process `to` reads, in rank order.
  auto read_by = [&](int from, int to) {
    std::vector<int> ranks;
    for (int r : process_ranks_[from]) {
      bool needed = false;
      for (int m : process_ranks_[to]) needed = needed || src[m] == r;
      if (needed) ranks.push_back(r);
    }
    return ranks;
  };
  std::vector<int64_t> out_bytes(processes, 0), in_bytes(processes, 0);
  std::vector<std::vector<int>> given(processes), needed(processes);
  for (int q = 0; q < processes; ++q) {
    if (q == me) continue;
    given[q] = read_by(me, q);
    needed[q] = read_by(q, me);
    out_bytes[q] = static_cast<int64_t>(given[q].size()) * bytes;
    in_bytes[q] = static_cast<int64_t>(needed[q].size()) * bytes;
  }
  staging_.resize(std::accumulate(out_bytes.begin(), out_bytes.end(), int64_t{0}));
  char* put = staging_.data();
  for (int q = 0; q < processes; ++q) {
    for (int r : given[q]) {
      std::memcpy(put, requests_[local_index_[r]].in, bytes);
      put += bytes;
    }
  }
  send_and_receive(back_to_back(staging_.data(), out_bytes), out_bytes, in_bytes, cancel);
  std::vector<const char*> region = back_to_back(gathered_.data(), in_bytes);
  std::vector<const void*> ins(members_.size(), nullptr);
  for (int r : local_ranks_) ins[r] = requests_[local_index_[r]].in;
  for (int p = 0; p < processes; ++p) {
    for (size_t j = 0; j < needed[p].size(); ++j) ins[needed[p][j]] = region[p] + j * bytes;
  }
  compute(ins);
}

std::vector<const char*> CrossProcessExchange::back_to_back(const char* base,
                                                            const std::vector<int64_t>& bytes) {
  std::vector<const char*> at(bytes.size());
  for (size_t p = 0; p < bytes.size(); ++p) {
    at[p] = base;
    base += bytes[p];
  }
  return at;
}

void CrossProcessExchange::send_and_receive(const std::vector<const char*>& from,
                                            const std::vector<int64_t>& out,
                                            const std::vector<int64_t>& in, Cancel& cancel) {
  gathered_.resize(std::accumulate(in.begin(), in.end(), int64_t{0}));
  const std::vector<const char*> to = back_to_back(gathered_.data(), in);
  bool small = true;
  for (size_t p = 0; p < out.size(); ++p) {
    small = small && out[p] <= kBlockingMessageBytes && in[p] <= kBlockingMessageBytes;
  }
  try {
    if (blocking_now_ && small) {
      std::vector<std::unique_ptr<gloo::transport::Buffer>> sends;
      for (int p = 0; p < context_->size; ++p) {
        if (out[p] > 0) sends.push_back(blocking_send(p, from[p], out[p]));
      }
      for (int p = 0; p < context_->size; ++p) {
        if (in[p] > 0) blocking_receive(p, const_cast<char*>(to[p]), in[p]);
      }
      for (const auto& send : sends) send->waitSend();
      return;
    }
    // Every process calls nextSlot as often, in the same order: the slots agree.
    const uint64_t slot = context_->nextSlot();
    std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> sends, receives;
    for (int p = 0; p < context_->size; ++p) {
      if (in[p] > 0) {
        receives.push_back(context_->createUnboundBuffer(const_cast<char*>(to[p]), in[p]));
        receives.back()->recv(p, slot);
      }
      if (out[p] > 0) {
        sends.push_back(context_->createUnboundBuffer(const_cast<char*>(from[p]), out[p]));
        sends.back()->send(p, slot);
      }
    }
    for (const auto& receive : receives) {
      if (!receive->waitRecv(time_left(cancel))) cancel.throw_aborted();
    }
    for (const auto& send : sends) {
      if (!send->waitSend(time_left(cancel))) cancel.throw_aborted();
    }
  } catch (const gloo::Exception& e) {
    gloo_failed(e, describe(header_of(requests_[0], 0, 0, 0)).c_str(), cancel);
  }
}

std::unique_ptr<gloo::transport::Buffer> CrossProcessExchange::blocking_send(int process,
                                                                             const void* data,
                                                                             int64_t bytes) {
  auto buffer =
      blocking_->getPair(process)->createSendBuffer(kMessageSlot, const_cast<void*>(data), bytes);
  buffer->send();
  return buffer;
}

void CrossProcessExchange::blocking_receive(int process, void* data, int64_t bytes) {
  blocking_->getPair(process)->createRecvBuffer(kMessageSlot, data, bytes)->waitRecv();
}

void CrossProcessExchange::chain(Cancel& cancel) {
  const CollectiveRequest& first = requests_[0];
  const int me = context_->rank, last = context_->size - 1;
  const int64_t count = first.a, item = itemsize(first.dtype),
                partial_item = compute_size(first.dtype);
  const int64_t chunk_bytes =
      std::clamp(count * partial_item / 4, kChainMinChunkBytes, kChainMaxChunkBytes);
  const int64_t chunk = std::max<int64_t>(1, chunk_bytes / partial_item);
  const int64_t chunks = (count + chunk - 1) / chunk;
  gathered_.resize(me > 0 ? count * partial_item : 0);    // the partial from process me - 1
  staging_.resize(me < last ? count * partial_item : 0);  // the partial for process me + 1
  std::vector<const void*> ins;
  for (const CollectiveRequest& r : requests_) ins.push_back(r.in);
  // Each stream is one buffer per link, a message per chunk.
  std::unique_ptr<gloo::transport::Buffer> partial_in, partial_out, result_in;
  std::vector<std::unique_ptr<gloo::transport::Buffer>> result_out;
  try {
    if (me > 0) {
      partial_in = blocking_->getPair(me - 1)->createRecvBuffer(kPartialSlot, gathered_.data(),
                                                                gathered_.size());
    }
    if (me < last) {
      partial_out = blocking_->getPair(me + 1)->createSendBuffer(kPartialSlot, staging_.data(),
                                                                 staging_.size());
      result_in = blocking_->getPair(last)->createRecvBuffer(kResultSlot, first.out, count * item);
    }
    for (int p = 0; me == last && p < last; ++p) {
      result_out.push_back(
          blocking_->getPair(p)->createSendBuffer(kResultSlot, first.out, count * item));
    }
    auto send = [](gloo::transport::Buffer& buffer, int64_t at, int64_t bytes) {
      buffer.send(at, bytes, at);
      buffer.waitSend();
    };
    const std::vector<void*> copies = other_outputs();
    int64_t results = 0;  // chunks of the result received
    auto receive_result = [&] {
      result_in->waitRecv();
      const int64_t at = results++ * chunk * item;
      const int64_t bytes = std::min(chunk * item, count * item - at);
      for (void* copy : copies)
        std::memcpy(static_cast<char*>(copy) + at, static_cast<const char*>(first.out) + at, bytes);
    };
    for (int64_t c = 0; c < chunks; ++c) {
      const FoldSpan span{.partial = partial_in ? gathered_.data() : nullptr,
                          .begin = c * chunk,
                          .count = std::min(chunk, count - c * chunk),
                          .out_partial = me != last,
                          .copies = &copies};
      if (partial_in) partial_in->waitRecv();
      fold(first.op, first.dtype, ins, me != last ? staging_.data() : first.out, span);
      if (partial_out) {
        send(*partial_out, span.begin * partial_item, span.count * partial_item);
        // Lock step: at most kChainLag chunks of results wait unread in a socket.
        if (c >= kChainLag) receive_result();
      }
      for (const auto& out : result_out) send(*out, span.begin * item, span.count * item);
    }
    while (result_in && results < chunks) receive_result();
  } catch (const gloo::Exception& e) {
    gloo_failed(e, describe(header_of(first, 0, 0, 0)).c_str(), cancel);
  }
}

std::vector<void*> CrossProcessExchange::other_outputs() const {
  std::vector<void*> outs;
  for (size_t i = 1; i < requests_.size(); ++i) {
    if (requests_[i].out) outs.push_back(requests_[i].out);
  }
  return outs;
}

void CrossProcessExchange::compute(const std::vector<const void*>& ins) {
  const int size = static_cast<int>(members_.size());
  const CollectiveRequest& first = requests_[0];
  switch (first.kind) {
    case CollectiveRequest::kAllReduce: {
      const std::vector<void*> copies = other_outputs();
      return fold(first.op, first.dtype, ins, first.out, first.a, &copies);
    }
    case CollectiveRequest::kReduceScatter: {
      const int64_t item = itemsize(first.dtype), inner = first.b;
      std::vector<const void*> rows(size);
      for (size_t i = 0; i < requests_.size(); ++i) {
        const int rank = local_ranks_[i];
        for (int64_t o = 0; o < first.a; ++o) {
          const int64_t offset = (o * size + rank) * inner * item;
          for (int q = 0; q < size; ++q) rows[q] = static_cast<const char*>(ins[q]) + offset;
          fold(first.op, first.dtype, rows, static_cast<char*>(requests_[i].out) + o * inner * item,
               inner);
        }
      }
      return;
    }
    case CollectiveRequest::kAllGather: {
      const int64_t row = first.b;
      for (const CollectiveRequest& r : requests_) {
        if (!r.out) continue;  // lent the first member's
        char* dst = static_cast<char*>(r.out);
        for (int64_t o = 0; o < first.a; ++o) {
          for (int q = 0; q < size; ++q) {
            std::memcpy(dst + (o * size + q) * row, static_cast<const char*>(ins[q]) + o * row,
                        row);
          }
        }
      }
      return;
    }
    case CollectiveRequest::kAllToAll: {
      const int64_t chunk = first.a;
      for (size_t i = 0; i < requests_.size(); ++i) {
        const int rank = local_ranks_[i];
        for (int q = 0; q < size; ++q) {
          std::memcpy(static_cast<char*>(requests_[i].out) + q * chunk,
                      static_cast<const char*>(ins[q]) + rank * chunk, chunk);
        }
      }
      return;
    }
    case CollectiveRequest::kPermute: {
      for (const CollectiveRequest& r : requests_) {
        if (r.src < 0) {
          std::memset(r.out, 0, first.a);
        } else {
          std::memcpy(r.out, ins[r.src], first.a);
        }
      }
      return;
    }
    case CollectiveRequest::kBarrier:
      return;
  }
}

void CrossProcessExchange::abort() {
  std::lock_guard<std::mutex> lock(mu_);
  aborted_ = true;
  cv_.notify_all();
}

bool CrossProcessExchange::release() {
  std::lock_guard<std::mutex> lock(mu_);
  lent_ = {};
  for (CollectiveRequest& r : requests_) r.out_keep = nullptr;
  return !aborted_ && arrived_ == 0;
}

void CrossProcessCommunicator::all_reduce(ReduceKind op, DType dtype, int64_t count, const void* in,
                                          void* out, const Keep&, Cancel& cancel) {
  exchange_->run(rank_, {CollectiveRequest::kAllReduce, op, dtype, count, 0, -1, in, out}, cancel);
}

Communicator::Lent CrossProcessCommunicator::all_reduce_shared(ReduceKind op, DType dtype,
                                                               int64_t count, const void* in,
                                                               void* out, const Keep& out_keep,
                                                               const Keep&, Cancel& cancel) {
  return exchange_->run(
      rank_, {CollectiveRequest::kAllReduce, op, dtype, count, 0, -1, in, out, out_keep}, cancel);
}

void CrossProcessCommunicator::reduce_scatter(ReduceKind op, DType dtype, int64_t outer,
                                              int64_t inner, const void* in, void* out, const Keep&,
                                              Cancel& cancel) {
  exchange_->run(rank_, {CollectiveRequest::kReduceScatter, op, dtype, outer, inner, -1, in, out},
                 cancel);
}

void CrossProcessCommunicator::all_gather(int64_t outer, int64_t row_bytes, const void* in,
                                          void* out, const Keep&, Cancel& cancel) {
  exchange_->run(rank_,
                 {CollectiveRequest::kAllGather, ReduceKind::kSum, DType::kBool, outer, row_bytes,
                  -1, in, out},
                 cancel);
}

Communicator::Lent CrossProcessCommunicator::all_gather_shared(int64_t outer, int64_t row_bytes,
                                                               const void* in, void* out,
                                                               const Keep& out_keep, const Keep&,
                                                               Cancel& cancel) {
  return exchange_->run(rank_,
                        {CollectiveRequest::kAllGather, ReduceKind::kSum, DType::kBool, outer,
                         row_bytes, -1, in, out, out_keep},
                        cancel);
}

void CrossProcessCommunicator::all_to_all(int64_t chunk_bytes, const void* in, void* out,
                                          const Keep&, Cancel& cancel) {
  exchange_->run(
      rank_,
      {CollectiveRequest::kAllToAll, ReduceKind::kSum, DType::kBool, chunk_bytes, 0, -1, in, out},
      cancel);
}

void CrossProcessCommunicator::permute(int src, int64_t bytes, const void* in, void* out,
                                       const Keep&, Cancel& cancel) {
  exchange_->run(
      rank_, {CollectiveRequest::kPermute, ReduceKind::kSum, DType::kBool, bytes, 0, src, in, out},
      cancel);
}

void CrossProcessCommunicator::barrier(Cancel& cancel) { exchange_->run(rank_, {}, cancel); }

}  // namespace spmd::internal
