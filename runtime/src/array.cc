// SPDX-License-Identifier: Apache-2.0
// Array storage, host transfer and shard assembly (spmd/array.h, array_impl.h).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <set>

#include "array_impl.h"
#include "backend/registry.h"
#include "backend/transfer.h"
#include "checks.h"
#include "exec/call_context.h"
#include "exec/processes.h"
#include "layout.h"
#include "spmd/errors.h"
#include "spmd/ops.h"
#include "thread_cache.h"

namespace spmd {
namespace internal {

void ArrayAccess::throw_unusable(const Array& a) {
  if (!a.impl_) {
    throw ValueError("use of an invalid (default-constructed) spmd::Array");
  }
  throw ValueError(fmt::format(
      "Array {} has been deleted: it was donated to a pmap or shard_map call (donate_argnums), "
      "which may reuse its memory. Use the call's result instead, or remove the argument from "
      "donate_argnums.",
      type_string(a.impl_->dtype, a.impl_->shape)));
}

Array ArrayAccess::wrap(std::shared_ptr<ArrayImpl> impl, uint64_t vma) {
  Array a;
  a.impl_ = std::move(impl);
  a.vma_ = vma;
  return a;
}

Device default_device() {
  // Asked by every op outside a call. The platforms in use are fixed once first asked for.
  static const Platform platform = platform_in_use({});
  const int process = process_layout().index;
  if (process == 0) return Device{0, platform, 0};
  return Device{process * backend_for(platform).device_count(), platform, process};
}

Device current_device() {
  DeviceContext* ctx = current_device_context();
  return ctx != nullptr ? ctx->device : default_device();
}

void set_full_index(const Shape& shape, Index& index) {
  index.resize(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) index[d] = {0, shape[d]};
}

Index full_index(const Shape& shape) {
  Index index;
  set_full_index(shape, index);
  return index;
}

namespace {

// Single-device arrays, every eager op's result among them, recycle their ArrayImpl per thread
// (thread_cache.h): a recycled one keeps the memory of its shape, its shard list and the shard's
// index and shape, which a new one allocates.
using ImplCache = ThreadCache<ArrayImpl, 32, destroy<ArrayImpl>>;

// The deleter of such impls: the buffer is released at once, the rest kept for reuse.
void recycle(ArrayImpl* impl) {
  impl->shards[0].buffer.reset();
  if (!ImplCache::give(impl, impl->home)) delete impl;
}

// Small CPU buffers are kept per thread with their memory too, for the next array of the same
// size (a loop of small ops): no trip to the device's allocator and its lock.
constexpr size_t kCachedBufferBytes = 4096;
struct CachedBuffer;
using BufferCache = ThreadCache<CachedBuffer, 16, destroy<CachedBuffer>>;
struct CachedBuffer final : Buffer {
  CachedBuffer(Device device, size_t bytes) : Buffer(device, bytes), home(BufferCache::home()) {}
  using Buffer::move_to;
  const void* home;  // the thread whose cache may keep it
};

void recycle(CachedBuffer* buffer) {
  if (!BufferCache::give(buffer, buffer->home)) delete buffer;
}

std::shared_ptr<Buffer> new_buffer(const Device& device, size_t bytes) {
  if (bytes > kCachedBufferBytes || device.platform != Platform::kCpu) {
    return std::make_shared<Buffer>(device, bytes);
  }
  // Any CPU device's buffer will do: a thread runs the bodies of several devices in turn (idle
  // threads help), and buffers kept for one device only were never reused by the next body.
  CachedBuffer* buffer =
      BufferCache::take_if([&](const CachedBuffer& b) { return b.bytes() == bytes; });
  if (buffer == nullptr) {
    buffer = new CachedBuffer(device, bytes);
  } else if (!(buffer->device() == device)) {
    buffer->move_to(device);
  }
  return std::shared_ptr<Buffer>(buffer, static_cast<void (*)(CachedBuffer*)>(recycle),
                                 ThreadCachedAllocator<Buffer>());
}

// The deleter of a reference that keeps another one alive (array_alias).
struct KeepAlive {
  std::shared_ptr<Buffer> buffer;
  void operator()(Buffer*) const {}
};

}  // namespace

Array array_from_buffer(DType dtype, const Shape& shape, std::shared_ptr<Buffer> buffer,
                        size_t offset) {
  const Device device = buffer->device();
  return array_from_buffer(dtype, shape, std::move(buffer), offset, device);
}

Array array_alias(DType dtype, const Shape& shape, const std::shared_ptr<Buffer>& buffer,
                  size_t offset, const Device& device) {
  // A reference count of its own, made by this thread: the devices of a call whose blocks share
  // one input's memory then do not all count on one (nor on a line next to the Buffer they read)
  // when they take references to their blocks (reshape, slices): two devices' reshape loop ran
  // 4x slower than one's.
  return array_from_buffer(
      dtype, shape,
      std::shared_ptr<Buffer>(buffer.get(), KeepAlive{buffer}, ThreadCachedAllocator<Buffer>()),
      offset, device);
}

Array array_from_buffer(DType dtype, const Shape& shape, std::shared_ptr<Buffer> buffer,
                        size_t offset, const Device& device) {
  ArrayImpl* impl = ImplCache::take();
  if (impl == nullptr) {
    impl = new ArrayImpl(dtype, shape, Sharding(device), std::vector<ShardData>(1));
    impl->home = ImplCache::home();
  } else {
    impl->dtype = dtype;
    // A loop of ops makes arrays of one shape: an impl recycled there already holds it.
    if (impl->shape != shape) impl->shape = shape;
    impl->sharding = Sharding(device);
    impl->deleted.store(false, std::memory_order_relaxed);
  }
  ShardData& shard = impl->shards[0];
  shard.device = device;
  if (shard.shape != shape) {
    set_full_index(shape, shard.index);
    shard.shape = shape;
  }
  shard.offset = offset;
  shard.buffer = std::move(buffer);
  return ArrayAccess::wrap(std::shared_ptr<ArrayImpl>(
      impl, static_cast<void (*)(ArrayImpl*)>(recycle), ThreadCachedAllocator<ArrayImpl>()));
}

Array empty_array(DType dtype, const Shape& shape, const Device& device) {
  const int64_t bytes = checked_bytes(shape, dtype, "");
  std::shared_ptr<Buffer> buffer;
  try {
    buffer = new_buffer(device, static_cast<size_t>(bytes));
  } catch (const ResourceExhausted& e) {
    throw ResourceExhausted(fmt::format("{} (an array of {})", e.what(), long_type(dtype, shape)));
  }
  return array_from_buffer(dtype, shape, std::move(buffer), 0);
}

Array make_sharded_array(DType dtype, Shape shape, const NamedSharding& sharding,
                         std::vector<ShardData> shards) {
  return ArrayAccess::wrap(
      std::make_shared<ArrayImpl>(dtype, std::move(shape), Sharding(sharding), std::move(shards)));
}

std::string long_type(DType dtype, const Shape& shape) {
  return fmt::format("{}[{}]", dtype_name(dtype), fmt::join(shape, ","));
}

std::string long_type(const Array& a) { return long_type(a.dtype(), a.shape()); }

const ShardData& single_shard(const Array& a) {
  const ArrayImpl& impl = ArrayAccess::impl(a);
  if (impl.shards.size() != 1) {
    throw RuntimeError("internal error: expected a single-device array, got " +
                       impl.sharding.str());
  }
  return impl.shards[0];
}

// Whether kernels for `reader` may read memory of `owner` in place.
static bool aliasable(const Device& owner, const Device& reader) {
  if (owner == reader) return is_addressable(owner);  // the common case: no backend to ask
  return owner.platform == reader.platform && is_addressable(owner) &&
         backend_for(owner).can_alias(owner, reader);
}

bool is_local(const Array& a, const Device& reader) {
  const ArrayImpl& impl = ArrayAccess::impl(a);
  return impl.shards.size() == 1 && aliasable(impl.shards[0].device, reader);
}

const Kernels& kernels(const Device& device) { return backend_for(device).kernels(device); }

const Kernels& kernels() { return kernels(current_device()); }

ConstView const_view(const Array& a) {
  const ShardData& s = single_shard(a);
  ConstView v{static_cast<const char*>(s.buffer->data()) + s.offset, ArrayAccess::impl(a).dtype,
              s.shape, Strides(s.shape.size())};
  set_dense_strides(v.shape, v.strides);
  return v;
}

MutView mut_view(const Array& a) {
  // Kernels write only into arrays their caller made and holds alone.
  ConstView v = const_view(a);
  return MutView{const_cast<void*>(v.data), v.dtype, std::move(v.shape), std::move(v.strides)};
}

ConstView broadcast_view(const Array& a, const Shape& shape) {
  const ShardData& s = single_shard(a);
  ConstView v{static_cast<const char*>(s.buffer->data()) + s.offset, ArrayAccess::impl(a).dtype,
              shape, Strides(shape.size())};
  // a's dense strides on the trailing dimensions whose extents match; 0 where a broadcasts.
  const size_t lead = shape.size() - s.shape.size();
  int64_t step = 1;
  for (size_t d = s.shape.size(); d-- > 0;) {
    if (s.shape[d] == shape[lead + d]) v.strides[lead + d] = step;
    step *= s.shape[d];
  }
  return v;
}

ConstView flat_view(const Array& a, int64_t n, bool repeat) {
  const ShardData& s = single_shard(a);
  return ConstView{static_cast<const char*>(s.buffer->data()) + s.offset,
                   ArrayAccess::impl(a).dtype, Dims{n}, Strides{repeat ? 0 : 1}};
}

MutView flat_mut_view(const Array& a, int64_t n) {
  const ShardData& s = single_shard(a);
  return MutView{static_cast<char*>(s.buffer->data()) + s.offset, ArrayAccess::impl(a).dtype,
                 Dims{n}, Strides{1}};
}

std::string index_str(const Index& index) {
  std::string out;
  for (const auto& [begin, end] : index) {
    out += fmt::format("{}{}:{}", out.empty() ? "" : ", ", begin, end);
  }
  return "[" + out + "]";
}

// The error for a read of `region` that needs `shard`, which lives in another process.
[[noreturn]] static void throw_not_addressable(const ArrayImpl& impl, const ShardData& shard,
                                               const Index& region) {
  throw ValueError(fmt::format(
      "reading {} of this {}[{}] array needs its shard {} on {}, which belongs to process {}; "
      "this is process {}, which holds only its addressable shards. Read "
      "Array::addressable_shards() instead, or gather the whole value into every process with "
      "spmd::process_allgather (every process must call it).",
      index_str(region), dtype_name(impl.dtype), fmt::join(impl.shape, ","), index_str(shard.index),
      shard.device.str(), shard.device.process_index, process_layout().index));
}

Array read_region(const Array& a, const Index& region, const Device& device) {
  const ArrayImpl& impl = ArrayAccess::impl(a);
  Shape shape(region.size());
  for (size_t d = 0; d < region.size(); ++d) shape[d] = region[d].second - region[d].first;
  Array out = empty_array(impl.dtype, shape, device);
  MutView dst_all = mut_view(out);
  // Replicated shards hold equal index ranges; like JAX, read the first device of each range
  // that this process holds.
  std::set<Index> held, done;
  for (const ShardData& s : impl.shards) {
    if (s.buffer) held.insert(s.index);
  }
  for (const ShardData& s : impl.shards) {
    Index overlap(region.size());
    bool empty = false;
    for (size_t d = 0; d < region.size(); ++d) {
      overlap[d] = {std::max(region[d].first, s.index[d].first),
                    std::min(region[d].second, s.index[d].second)};
      empty = empty || overlap[d].first >= overlap[d].second;
    }
    if (empty && shape_size(shape) > 0) continue;
    if (!s.buffer) {
      if (!held.count(s.index)) throw_not_addressable(impl, s, region);
      continue;
    }
    if (!done.insert(s.index).second) continue;
    ConstView src{static_cast<const char*>(s.buffer->data()) + s.offset,
                  impl.dtype,
                  {},
                  dense_strides(s.shape)};
    MutView dst = dst_all;
    dst.shape.clear();
    const int64_t item = itemsize(impl.dtype);
    for (size_t d = 0; d < region.size(); ++d) {
      int64_t len = std::max<int64_t>(0, overlap[d].second - overlap[d].first);
      src.data = static_cast<const char*>(src.data) +
                 (overlap[d].first - s.index[d].first) * src.strides[d] * item;
      dst.data = static_cast<char*>(dst.data) +
                 (overlap[d].first - region[d].first) * dst.strides[d] * item;
      src.shape.push_back(len);
      dst.shape.push_back(len);
    }
    copy_between(s.device, src, device, dst);
  }
  return out;
}

Array local(const Array& a, const Device& device) {
  if (is_local(a, device)) return a;
  const ArrayImpl& impl = ArrayAccess::impl(a);
  return with_vma(read_region(a, full_index(impl.shape), device), vma_of(a));
}

Array local(const Array& a) { return local(a, current_device()); }

// True when `region` of a dense array of `shape` is one contiguous run of memory.
static bool contiguous_region(const Shape& shape, const Index& region) {
  size_t d = 0;
  while (d < shape.size() && region[d].second - region[d].first == 1) ++d;
  for (size_t e = d + 1; e < shape.size(); ++e) {
    if (region[e].first != 0 || region[e].second != shape[e]) return false;
  }
  return true;
}

static size_t region_offset(const Shape& shape, const Index& region, DType dtype) {
  size_t offset = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    offset = offset * shape[d] + region[d].first;
  }
  return offset * itemsize(dtype);
}

Array shared_region(const Array& a, const Index& region, const Shape& shape, const Device& device) {
  const ArrayImpl& impl = ArrayAccess::impl(a);
  const ShardData* found = nullptr;
  size_t offset = 0;
  Index within(region.size());
  for (const ShardData& s : impl.shards) {
    if (!s.buffer || !aliasable(s.device, device)) continue;
    bool inside = true;
    for (size_t d = 0; d < region.size() && inside; ++d) {
      inside = s.index[d].first <= region[d].first && region[d].second <= s.index[d].second;
    }
    if (!inside) continue;
    for (size_t d = 0; d < region.size(); ++d) {
      within[d] = {region[d].first - s.index[d].first, region[d].second - s.index[d].first};
    }
    if (!contiguous_region(s.shape, within)) continue;
    found = &s;
    offset = s.offset + region_offset(s.shape, within, impl.dtype);
    if (s.device == device) break;  // of replicas, the reader's own
  }
  if (found == nullptr) return Array();
  return array_alias(impl.dtype, shape, found->buffer, offset, device);
}

// The block of `arg` for the device at mesh position `rank`, sharing memory where possible.
Array make_block(const Mesh& mesh, const Array& arg, const PartitionSpec& spec, int64_t rank,
                 const Device& device) {
  const ArrayImpl& impl = ArrayAccess::impl(arg);
  const Sharding& sharding = impl.sharding;
  Index region = block_index(mesh, spec, impl.shape, rank);
  if (sharding.is_named() && sharding.named().mesh() == mesh) {
    const ShardData& s = impl.shards[rank];  // the block itself, without a search
    if (s.index == region && aliasable(s.device, device)) {
      return array_alias(impl.dtype, s.shape, s.buffer, s.offset, device);
    }
  }
  Shape shape(region.size());
  for (size_t d = 0; d < region.size(); ++d) shape[d] = region[d].second - region[d].first;
  Array shared = shared_region(arg, region, shape, device);
  return shared.valid() ? shared : read_region(arg, region, device);
}

void check_donation(const std::vector<int>& argnums, std::span<const int> positions) {
  for (int argnum : argnums) {
    if (std::find(positions.begin(), positions.end(), argnum) == positions.end()) {
      std::vector<int> mapped(positions.begin(), positions.end());
      mapped.erase(std::unique(mapped.begin(), mapped.end()), mapped.end());
      throw ValueError(fmt::format(
          "donate_argnums contains {}, which is not the position of an Array argument of this "
          "call (Array arguments are at positions {}); only Arrays can be donated.",
          argnum, fmt::join(mapped, ", ")));
    }
  }
}

void donate(const std::vector<int>& argnums, const std::vector<Array>& args,
            std::span<const int> positions) {
  for (int argnum : argnums) {
    // Every leaf of the argument: the Array, or each element of a container.
    for (size_t i = 0; i < positions.size(); ++i) {
      if (positions[i] == argnum && !args[i].is_deleted()) delete_array(args[i]);
    }
  }
}

void delete_array(const Array& a) {
  ArrayAccess::impl(a);  // an already deleted array is an error
  ArrayAccess::ptr(a)->deleted.store(true, std::memory_order_release);
}

Array make_host_array(DType dtype, const void* data, Shape shape, size_t count) {
  const int64_t size = checked_size(shape, "Array::from_vector");
  if (count != static_cast<uint64_t>(size)) {
    throw ValueError(
        fmt::format("Array::from_vector got {} values for shape {}, which holds {} elements", count,
                    shape_tuple_string(shape), size));
  }
  Device device = current_device();
  Array out = empty_array(dtype, shape, device);
  backend_for(device).from_host(device, data, mut_view(out).data, count * itemsize(dtype));
  return out;
}

void read_host(const Array& a, DType as, void* out) {
  Array dense = local(a.dtype() == as ? a : astype(a, as));
  ConstView v = const_view(dense);
  backend_for(single_shard(dense).device)
      .to_host(single_shard(dense).device, v.data, out, shape_size(v.shape) * itemsize(as));
}

void check_single_element(const Array& a, const char* what) {
  if (a.size() != 1) {
    throw ValueError(fmt::format("{} needs an array with exactly one element, got {}", what,
                                 type_string(a.dtype(), a.shape())));
  }
}

}  // namespace internal

using internal::ArrayAccess;

Array::Array() = default;

DType Array::dtype() const { return ArrayAccess::impl(*this).dtype; }
const Shape& Array::shape() const { return ArrayAccess::impl(*this).shape; }
int Array::ndim() const { return static_cast<int>(shape().size()); }
int64_t Array::size() const { return shape_size(shape()); }
const Sharding& Array::sharding() const { return ArrayAccess::impl(*this).sharding; }
bool Array::is_deleted() const { return impl_ && impl_->deleted.load(std::memory_order_acquire); }

Array Array::reshape(Shape new_shape) const { return spmd::reshape(*this, std::move(new_shape)); }
Array Array::transpose(std::vector<int> perm) const {
  return spmd::transpose(*this, std::move(perm));
}
Array Array::astype(DType dtype) const { return spmd::astype(*this, dtype); }
Array Array::operator[](int64_t i) const {
  if (ndim() == 0) {
    throw IndexError("Too many indices: array is 0-dimensional, but 1 were indexed");
  }
  return spmd::take(*this, i, 0);
}

std::vector<Shard> Array::addressable_shards() const {
  const internal::ArrayImpl& impl = ArrayAccess::impl(*this);
  std::vector<Shard> out;
  for (const internal::ShardData& s : impl.shards) {
    if (!s.buffer) continue;  // another process's shard
    out.push_back(
        Shard{s.device, s.index,
              internal::array_from_buffer(impl.dtype, s.shape, s.buffer, s.offset, s.device)});
  }
  return out;
}

namespace {

// A float's text with NumPy's trailing dot for integral values ("1.", "0.5", "nan", "1e+20").
template <class F>
std::string float_text(F v) {
  std::string text = fmt::format("{}", v);
  if (text.find_first_of(".en") == std::string::npos) text += ".";
  return text;
}

// The shortest decimal that reads back as the same 16-bit float, NumPy's rule for float16 scalars
// (bfloat16 0.1 prints as 0.1, where its value as a float32 would print as 0.099975586).
template <class Half>
std::string shortest_text(Half v) {
  const float f = static_cast<float>(v);
  if (!std::isfinite(f)) return float_text(f);
  for (int digits = 1;; ++digits) {
    const double shortest = std::strtod(fmt::format("{:.{}e}", f, digits - 1).c_str(), nullptr);
    // Printed like a float32 (positional or exponent form by the same rule).
    if (Half(static_cast<float>(shortest)).bits == v.bits) return float_text(shortest);
  }
}

// NumPy's form of a complex element: "1.+2.j", "0.1-1.j", "nan+nanj".
template <class F>
std::string complex_text(std::complex<F> z) {
  return float_text(z.real()) + (std::signbit(z.imag()) ? "" : "+") + float_text(z.imag()) + "j";
}

// Every element as text: ints exactly, floats in shortest round-trip form with NumPy's trailing
// dot for integral values, bools as True/False.
std::vector<std::string> format_elements(const Array& a) {
  std::vector<std::string> items;
  switch (a.dtype()) {
    case DType::kComplex64:
      for (auto z : a.to_vector<std::complex<float>>()) items.push_back(complex_text(z));
      return items;
    case DType::kComplex128:
      for (auto z : a.to_vector<std::complex<double>>()) items.push_back(complex_text(z));
      return items;
    case DType::kBool:
      for (bool b : a.to_vector<bool>()) items.push_back(b ? "True" : "False");
      return items;
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32:
      for (int64_t v : a.to_vector<int64_t>()) items.push_back(std::to_string(v));
      return items;
    case DType::kUInt64:  // past int64's range
      for (uint64_t v : a.to_vector<uint64_t>()) items.push_back(std::to_string(v));
      return items;
    case DType::kFloat64:
      for (double v : a.to_vector<double>()) items.push_back(float_text(v));
      return items;
    case DType::kFloat32:
      for (float v : a.to_vector<float>()) items.push_back(float_text(v));
      return items;
    case DType::kFloat16:
      for (float16_t v : a.to_vector<float16_t>()) items.push_back(shortest_text(v));
      return items;
    case DType::kBFloat16:
      for (bfloat16_t v : a.to_vector<bfloat16_t>()) items.push_back(shortest_text(v));
      return items;
  }
  return items;
}

}  // namespace

std::string Array::str() const {
  const Shape& s = shape();
  std::vector<std::string> items = format_elements(*this);
  if (s.empty()) return items[0];
  // Nested brackets, one row of the last dimension per line (NumPy's layout without alignment).
  std::string out(s.size(), '[');
  if (items.empty()) return out + std::string(s.size(), ']');
  std::vector<int64_t> counter(s.size(), 0);
  size_t pos = 0;
  for (;;) {
    out += items[pos++];
    int d = static_cast<int>(s.size()) - 1;
    while (d >= 0 && ++counter[d] == s[d]) counter[d--] = 0;
    if (d < 0) break;
    int closed = static_cast<int>(s.size()) - 1 - d;
    out.append(closed, ']');
    if (closed == 0) {
      out += ", ";
    } else {
      out += ',';
      out.append(closed, '\n');
      out.append(d + 1, ' ');
    }
    out.append(closed, '[');
  }
  return out + std::string(s.size(), ']');
}

std::ostream& operator<<(std::ostream& os, const Array& a) { return os << a.str(); }

Array device_put(const Array& x, const NamedSharding& sharding) {
  Shape global = x.shape();
  Shape block = sharding.shard_shape(global);  // validates rank and divisibility
  const Mesh& mesh = sharding.mesh();
  std::vector<internal::ShardData> shards;
  for (int64_t r = 0; r < mesh.size(); ++r) {
    const Device& device = mesh.devices()[r];
    Index index = internal::block_index(mesh, sharding.spec(), global, r);
    if (!internal::is_addressable(device)) {  // another process puts its own blocks
      shards.push_back(internal::ShardData{device, std::move(index), block, nullptr, 0});
      continue;
    }
    Array b = internal::make_block(mesh, x, sharding.spec(), r, device);
    const internal::ShardData& s = internal::single_shard(b);
    shards.push_back(internal::ShardData{device, std::move(index), block, s.buffer, s.offset});
  }
  return internal::make_sharded_array(x.dtype(), global, sharding, std::move(shards));
}

Array device_put(const Array& x, const Device& device) {
  internal::check_device(device, "device_put's device");
  if (internal::is_local(x, device) && internal::single_shard(x).device == device) return x;
  return internal::read_region(x, internal::full_index(x.shape()), device);
}

}  // namespace spmd
