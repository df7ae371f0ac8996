// SPDX-License-Identifier: Apache-2.0
// Communicators over members in nodes (hierarchical_communicator.h).
#include "backend/hierarchical_communicator.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <utility>

#include "backend/registry.h"

namespace spmd::internal {
namespace {

using Block = std::shared_ptr<Buffer>;

// Calls f(first, rank, count) for each run of consecutive ranks in `ranks` (ascending), where
// ranks[first + i] == rank + i for i < count. A node's members usually hold consecutive ranks, so
// each run is one strided copy instead of one per member.
template <class F>
void for_each_run(const std::vector<int>& ranks, F f) {
  for (size_t first = 0; first < ranks.size();) {
    size_t end = first + 1;
    while (end < ranks.size() && ranks[end] == ranks[end - 1] + 1) ++end;
    f(static_cast<int64_t>(first), static_cast<int64_t>(ranks[first]),
      static_cast<int64_t>(end - first));
    first = end;
  }
}

char* at(void* base, int64_t offset) { return static_cast<char*>(base) + offset; }
const char* at(const void* base, int64_t offset) { return static_cast<const char*>(base) + offset; }

BinaryOp binary_of(ReduceKind op) {
  switch (op) {
    case ReduceKind::kSum:
      return BinaryOp::kAdd;
    case ReduceKind::kMax:
      return BinaryOp::kMax;
    case ReduceKind::kMin:
      break;
  }
  return BinaryOp::kMin;
}

class HierarchicalCommunicator final : public Communicator {
 public:
  HierarchicalCommunicator(NodeLayout layout, int rank, const Device& device,
                           std::unique_ptr<Communicator> local,
                           std::unique_ptr<Communicator> leaders)
      : layout_(std::move(layout)),
        rank_(rank),
        node_(layout_.node(rank)),
        device_(device),
        backend_(backend_for(device)),
        local_(std::move(local)),
        leaders_(std::move(leaders)) {}

  void all_reduce(ReduceKind op, DType dtype, int64_t count, const void* in, void* out,
                  const Keep& keep, Cancel& cancel) override {
    if (count == 0) return;
    const Block all = scratch(layout_.size() * count * itemsize(dtype));
    gather(1, count * itemsize(dtype), in, all->data(), keep, cancel);
    fold(op, dtype, count, all->data(), out);
  }

  void reduce_scatter(ReduceKind op, DType dtype, int64_t outer, int64_t inner, const void* in,
                      void* out, const Keep&, Cancel& cancel) override {
    if (outer * inner == 0) return;
    // [outer][size][inner] -> [size][outer][inner]: the blocks for each rank, whole, for trade().
    const int64_t size = layout_.size();
    const int64_t row = inner * itemsize(dtype);
    const Block by_rank = scratch(size * outer * row);
    kernels().copy(
        ConstView{in, DType::kUInt8, {size, outer, row}, {row, size * row, 1}},
        MutView{by_rank->data(), DType::kUInt8, {size, outer, row}, {outer * row, row, 1}});
    const Block mine = scratch(size * outer * row);  // [q]: member q's block for this rank
    trade(outer * row, by_rank->data(), mine->data(), by_rank, cancel);
    fold(op, dtype, outer * inner, mine->data(), out);
  }

  void all_gather(int64_t outer, int64_t row_bytes, const void* in, void* out, const Keep& keep,
                  Cancel& cancel) override {
    if (outer * row_bytes == 0) return;
    gather(outer, row_bytes, in, out, keep, cancel);
  }

  void all_to_all(int64_t chunk_bytes, const void* in, void* out, const Keep& keep,
                  Cancel& cancel) override {
    if (chunk_bytes == 0) return;
    trade(chunk_bytes, in, out, keep, cancel);
  }

  void permute(int src, int64_t bytes, const void* in, void* out, const Keep& keep,
               Cancel& cancel) override {
    if (bytes == 0) return;
    const Block all = scratch(layout_.size() * bytes);
    gather(1, bytes, in, all->data(), keep, cancel);
    if (src < 0) {
      kernels().fill(MutView{out, DType::kUInt8, {bytes}, {1}}, int64_t{0});
    } else {
      copy_rows(1, bytes, at(all->data(), src * bytes), bytes, out, bytes);
    }
  }

  void barrier(Cancel& cancel) override {
    local_->barrier(cancel);
    if (leaders_) leaders_->barrier(cancel);
    local_->barrier(cancel);
  }

  void abort() override {
    local_->abort();
    if (leaders_) leaders_->abort();
  }

  bool release() override {
    const bool local = local_->release();
    const bool leaders = leaders_ == nullptr || leaders_->release();
    return local && leaders;
  }

 private:
  const Kernels& kernels() const { return backend_.kernels(device_); }
  Block scratch(int64_t bytes) const {
    return std::make_shared<Buffer>(device_, static_cast<size_t>(bytes));
  }

  // rows x row_bytes bytes from src (rows src_pitch apart) to dst (rows dst_pitch apart).
  void copy_rows(int64_t rows, int64_t row_bytes, const void* src, int64_t src_pitch, void* dst,
                 int64_t dst_pitch) const {
    kernels().copy(ConstView{src, DType::kUInt8, {rows, row_bytes}, {src_pitch, 1}},
                   MutView{dst, DType::kUInt8, {rows, row_bytes}, {dst_pitch, 1}});
  }

  // out ([outer][size][row]) = every member's in ([outer][row]), on every member.
  void gather(int64_t outer, int64_t row, const void* in, void* out, const Keep& keep,
              Cancel& cancel) {
    const int64_t size = layout_.size();
    const int64_t nodes = layout_.nodes();
    const int64_t members = static_cast<int64_t>(layout_.ranks(node_).size());
    const int64_t widest = layout_.widest();
    const Block node_inputs = scratch(outer * members * row);  // [outer][member][row]
    local_->all_gather(outer, row, in, node_inputs->data(), keep, cancel);
    if (leaders_) {
      // Every node sends `widest` rows per outer index (NCCL's all_gather takes one size).
      Block padded = node_inputs;
      if (members < widest) {
        padded = scratch(outer * widest * row);
        copy_rows(outer, members * row, node_inputs->data(), members * row, padded->data(),
                  widest * row);
      }
      const Block all = scratch(outer * nodes * widest * row);  // [outer][node][member][row]
      leaders_->all_gather(outer, widest * row, padded->data(), all->data(), padded, cancel);
      for (int64_t m = 0; m < nodes; ++m) {
        for_each_run(layout_.ranks(m), [&](int64_t j, int64_t r, int64_t n) {
          copy_rows(outer, n * row, at(all->data(), (m * widest + j) * row), nodes * widest * row,
                    at(out, r * row), size * row);
        });
      }
    }
    from_leader(out, outer * size * row, cancel);
  }

  // out[q] = in_q[rank] (chunk bytes each; in and out are [size][chunk]).
  void trade(int64_t chunk, const void* in, void* out, const Keep& keep, Cancel& cancel) {
    const int64_t size = layout_.size();
    const int64_t nodes = layout_.nodes();
    const int64_t members = static_cast<int64_t>(layout_.ranks(node_).size());
    const int64_t widest = layout_.widest();
    const Block node_inputs = scratch(members * size * chunk);  // [member][q]
    local_->all_gather(1, size * chunk, in, node_inputs->data(), keep, cancel);
    // What one node sends another: [its member i][the other's member j], chunk bytes each.
    const int64_t block = widest * widest * chunk;
    const Block received = scratch(nodes * block);  // [node m][m's member i][this node's j]
    if (leaders_) {
      const Block sent = scratch(nodes * block);  // [node m][this node's i][m's member j]
      for (int64_t m = 0; m < nodes; ++m) {
        for_each_run(layout_.ranks(m), [&](int64_t j, int64_t r, int64_t n) {
          copy_rows(members, n * chunk, at(node_inputs->data(), r * chunk), size * chunk,
                    at(sent->data(), (m * widest * widest + j) * chunk), widest * chunk);
        });
      }
      leaders_->all_to_all(block, sent->data(), received->data(), sent, cancel);
    }
    from_leader(received->data(), nodes * block, cancel);
    const int64_t j = layout_.local_rank(rank_);
    for (int64_t m = 0; m < nodes; ++m) {
      for_each_run(layout_.ranks(m), [&](int64_t i, int64_t r, int64_t n) {
        copy_rows(n, chunk, at(received->data(), ((m * widest + i) * widest + j) * chunk),
                  widest * chunk, at(out, r * chunk), chunk);
      });
    }
  }

  // The node's leader's `bytes` at `data` into `data` of the node's other members.
  void from_leader(void* data, int64_t bytes, Cancel& cancel) {
    // The leader's permute output, and the others' input, which nobody reads.
    const Block spare = scratch(bytes);
    if (leaders_) {
      local_->permute(-1, bytes, data, spare->data(), spare, cancel);
    } else {
      local_->permute(0, bytes, spare->data(), data, spare, cancel);
    }
  }

  // out (count elements of dtype) = rows[0] op rows[1] op ... op rows[size - 1], left to right,
  // as the CPU backend folds members: in float32 for float16/bfloat16, rounded once.
  void fold(ReduceKind op, DType dtype, int64_t count, const void* rows, void* out) const {
    const bool widen = dtype == DType::kFloat16 || dtype == DType::kBFloat16;
    const DType acc = widen ? DType::kFloat32 : dtype;
    const int64_t size = layout_.size();
    Block widened;
    if (widen) {
      widened = scratch(size * count * itemsize(acc));
      kernels().copy(ConstView{rows, dtype, {size * count}, {1}},
                     MutView{widened->data(), acc, {size * count}, {1}});
      rows = widened->data();
    }
    const auto row = [&](int64_t q) {
      return ConstView{at(rows, q * count * itemsize(acc)), acc, {count}, {1}};
    };
    const Block sums[2] = {scratch(count * itemsize(acc)), scratch(count * itemsize(acc))};
    ConstView sum = row(0);
    for (int64_t q = 1; q < size; ++q) {
      const bool last = q == size - 1 && !widen;
      const MutView next{last ? out : sums[q % 2]->data(), acc, {count}, {1}};
      kernels().binary(binary_of(op), sum, row(q), next);
      sum = ConstView{next.data, acc, {count}, {1}};
    }
    if (widen) kernels().copy(sum, MutView{out, dtype, {count}, {1}});
  }

  const NodeLayout layout_;
  const int rank_;
  const int node_;
  const Device device_;
  Backend& backend_;
  const std::unique_ptr<Communicator> local_;
  const std::unique_ptr<Communicator> leaders_;  // null unless this member leads its node
};

// The rendezvous of one hierarchical communicator's parts, shared by its members.
struct PartRendezvous {
  std::deque<Rendezvous> nodes;  // by node (a deque: Rendezvous does not move)
  Rendezvous leaders;
};

}  // namespace

NodeLayout::NodeLayout(const std::vector<int>& node_of)
    : node_(node_of.size()), local_rank_(node_of.size()) {
  std::map<int, int> index;  // node id -> number
  for (size_t r = 0; r < node_of.size(); ++r) {
    const auto [it, added] = index.try_emplace(node_of[r], static_cast<int>(ranks_.size()));
    if (added) ranks_.emplace_back();
    node_[r] = it->second;
    local_rank_[r] = static_cast<int>(ranks_[it->second].size());
    ranks_[it->second].push_back(static_cast<int>(r));
    widest_ = std::max(widest_, static_cast<int>(ranks_[it->second].size()));
  }
}

std::unique_ptr<Communicator> make_hierarchical_communicator(Backend& backend,
                                                             const std::vector<Device>& members,
                                                             const NodeLayout& layout, int rank,
                                                             Rendezvous& rendezvous,
                                                             Cancel& cancel) {
  const std::shared_ptr<PartRendezvous> parts =
      rendezvous.shared<PartRendezvous>([nodes = layout.nodes()] {
        auto made = std::make_shared<PartRendezvous>();
        made->nodes.resize(static_cast<size_t>(nodes));
        return made;
      });
  const int node = layout.node(rank);
  std::vector<Device> node_members;
  for (int r : layout.ranks(node)) node_members.push_back(members[r]);
  std::unique_ptr<Communicator> local = backend.make_communicator(
      node_members, layout.local_rank(rank), parts->nodes[static_cast<size_t>(node)], cancel);
  std::unique_ptr<Communicator> leaders;
  if (layout.local_rank(rank) == 0) {
    std::vector<Device> leader_devices;
    for (int m = 0; m < layout.nodes(); ++m) leader_devices.push_back(members[layout.ranks(m)[0]]);
    leaders = backend.make_communicator(leader_devices, node, parts->leaders, cancel);
  }
  return std::make_unique<HierarchicalCommunicator>(layout, rank, members[rank], std::move(local),
                                                    std::move(leaders));
}

}  // namespace spmd::internal
