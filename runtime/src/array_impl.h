// SPDX-License-Identifier: Apache-2.0
// Internal: what an Array is made of, and the helpers the ops layer, shard_map and the
// collectives use to create arrays and hand their memory to kernels.
//
// An ArrayImpl is immutable while arrays refer to it (only `deleted` changes, on donation; a
// single- device one is then reused, array.cc). A shard is a dense row-major block in a Buffer,
// starting `offset` bytes in, so slicing the leading dimension and reshaping share memory instead
// of copying.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "backend/kernels.h"
#include "spmd/array.h"

namespace spmd::internal {

struct ShardData {
  Device device;
  Index index;  // position in the global array
  Shape shape;  // block shape
  std::shared_ptr<Buffer> buffer;
  size_t offset = 0;  // bytes into buffer
};

// Whole cache lines (alignas(64)): a thread rewrites a recycled impl for every op, which must not
// share a line with what other threads read (a body's function object, another device's block).
struct alignas(64) ArrayImpl {
  ArrayImpl(DType dtype_in, Shape shape_in, Sharding sharding_in, std::vector<ShardData> shards_in)
      : dtype(dtype_in),
        shape(std::move(shape_in)),
        sharding(std::move(sharding_in)),
        shards(std::move(shards_in)) {}
  DType dtype;
  Shape shape;
  Sharding sharding;
  std::vector<ShardData> shards;  // one per device of the sharding, in mesh order
  std::atomic<bool> deleted{false};
  const void* home = nullptr;  // the thread whose cache may keep it (array.cc), or none
};

struct ArrayAccess {
  // The impl of a valid, live array; ValueError for an invalid or donated one. Inline: every
  // accessor of every op asks.
  static const ArrayImpl& impl(const Array& a) {
    const ArrayImpl* p = a.impl_.get();
    if (p == nullptr || p->deleted.load(std::memory_order_acquire)) [[unlikely]] {
      throw_unusable(a);
    }
    return *p;
  }
  [[noreturn]] static void throw_unusable(const Array& a);
  static const std::shared_ptr<ArrayImpl>& ptr(const Array& a) { return a.impl_; }
  static Array wrap(std::shared_ptr<ArrayImpl> impl, uint64_t vma = 0);
  static uint64_t vma(const Array& a) { return a.vma_; }
  static void set_vma(Array& a, uint64_t vma) { a.vma_ = vma; }
};

inline uint64_t vma_of(const Array& a) { return ArrayAccess::vma(a); }
inline Array with_vma(Array a, uint64_t vma) {
  ArrayAccess::set_vma(a, vma);
  return a;
}

// The device ops run on: the body's device inside a mapped call, else the default device.
Device current_device();
Device default_device();

// A new dense array on `device` with unspecified contents. ValueError for a bad shape,
// ResourceExhausted when the device has no memory for it.
Array empty_array(DType dtype, const Shape& shape, const Device& device);
// A new dense array on the current device.
inline Array empty_array(DType dtype, const Shape& shape) {
  return empty_array(dtype, shape, current_device());
}
// A single-device array over existing memory (zero-copy), on the buffer's device or on `device`,
// which must be able to read and write that memory in place (aliasable, array.cc): a block that
// shard_map hands a device is that device's array even where it shares another device's memory.
Array array_from_buffer(DType dtype, const Shape& shape, std::shared_ptr<Buffer> buffer,
                        size_t offset);
Array array_from_buffer(DType dtype, const Shape& shape, std::shared_ptr<Buffer> buffer,
                        size_t offset, const Device& device);
// The same over memory that other arrays hold too (an input's blocks), with a reference count of
// its own, so that threads taking references to different arrays over one buffer never contend.
Array array_alias(DType dtype, const Shape& shape, const std::shared_ptr<Buffer>& buffer,
                  size_t offset, const Device& device);
// A sharded array from per-device blocks.
Array make_sharded_array(DType dtype, Shape shape, const NamedSharding& sharding,
                         std::vector<ShardData> shards);

// "[0:2, 0:8]": an index range as messages print it.
std::string index_str(const Index& index);

// The index covering all of an array of `shape` (set_full_index: into `index`, reusing its memory).
Index full_index(const Shape& shape);
void set_full_index(const Shape& shape, Index& index);

// True for an array stored as one dense block that `reader` may access directly.
bool is_local(const Array& a, const Device& reader);
// `a` as one dense block readable on `device` (the current device by default): `a` itself when
// it already is, else a copy assembled from its shards.
Array local(const Array& a, const Device& device);
Array local(const Array& a);
// The index range [region) of `a` as a new dense array on `device`.
Array read_region(const Array& a, const Index& region, const Device& device);

// The elements of `region` of `a`, as an array of `shape` (as many elements, row-major) that shares
// the memory of a shard readable on `device` (preferring `device`'s own), when one holds the region
// as one contiguous run; else an invalid Array.
Array shared_region(const Array& a, const Index& region, const Shape& shape, const Device& device);

// The block of `arg` that `spec` gives the device at position `rank` of `mesh`, on `device`:
// the existing shard or a view into a single-device array when possible, else a copy.
Array make_block(const Mesh& mesh, const Array& arg, const PartitionSpec& spec, int64_t rank,
                 const Device& device);

// Kernel views of a local array (see is_local).
ConstView const_view(const Array& a);
MutView mut_view(const Array& a);
// A view of `a` broadcast to `shape` (NumPy rules, 0 strides), for kernels.
ConstView broadcast_view(const Array& a, const Shape& shape);
// Rank-1 views of n elements for elementwise kernels whose operands have the result's size: local
// arrays are dense, so `a`'s n elements in order, or (`repeat`) its one element n times (stride
// 0). Made without broadcast_view's per-dimension loop.
ConstView flat_view(const Array& a, int64_t n, bool repeat);
MutView flat_mut_view(const Array& a, int64_t n);
// The element count of a shape that an array already has (checked when it was made).
inline int64_t element_count(const Shape& shape) {
  int64_t n = 1;
  for (int64_t extent : shape) n *= extent;
  return n;
}

// The kernels of `device`'s backend (the current device's by default).
const Kernels& kernels(const Device& device);
const Kernels& kernels();

// JAX's long type form used by shard_map messages: "int32[6]", "float32[4,2]".
std::string long_type(const Array& a);
std::string long_type(DType dtype, const Shape& shape);

// The shard of a single-device array.
const ShardData& single_shard(const Array& a);

// Marks `a` deleted (donation); later reads throw ValueError.
void delete_array(const Array& a);

// ValueError unless every entry of `argnums` is the position (among all of a call's arguments)
// of an Array argument; `positions` are the Array arguments' positions.
void check_donation(const std::vector<int>& argnums, std::span<const int> positions);
// Deletes the donated Array arguments, after a successful call.
void donate(const std::vector<int>& argnums, const std::vector<Array>& args,
            std::span<const int> positions);

}  // namespace spmd::internal
