// SPDX-License-Identifier: Apache-2.0
// OpSignature hashing and descriptions (op_signature.h).
#include "exec/op_signature.h"

#include <fmt/format.h>

#include <cstring>

namespace spmd::internal {

const char* collective_name(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kPsum:
      return "psum";
    case CollectiveKind::kPmean:
      return "pmean";
    case CollectiveKind::kPmax:
      return "pmax";
    case CollectiveKind::kPmin:
      return "pmin";
    case CollectiveKind::kAllGather:
      return "all_gather";
    case CollectiveKind::kPsumScatter:
      return "psum_scatter";
    case CollectiveKind::kPpermute:
      return "ppermute";
    case CollectiveKind::kPshuffle:
      return "pshuffle";
    case CollectiveKind::kPbroadcast:
      return "pbroadcast";
    case CollectiveKind::kAllToAll:
      return "all_to_all";
    case CollectiveKind::kBarrier:
      return "barrier";
  }
  return "collective";
}

bool is_reduction(CollectiveKind kind) {
  return kind == CollectiveKind::kPsum || kind == CollectiveKind::kPmean ||
         kind == CollectiveKind::kPmax || kind == CollectiveKind::kPmin;
}

uint64_t hash_combine(uint64_t seed, uint64_t value) {
  // splitmix64's finaliser over seed ^ value: one multiply-xorshift round per word.
  uint64_t z = seed ^ (value + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void OpSignature::set_shape(const Shape& shape) {
  ndim = static_cast<int>(shape.size());
  shape_hash = 0xcbf29ce484222325ull;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d < static_cast<size_t>(kMaxDims)) dims[d] = shape[d];
    shape_hash = hash_combine(shape_hash, static_cast<uint64_t>(shape[d]));
  }
}

uint64_t OpSignature::hash() const {
  uint64_t h = 0xcbf29ce484222325ull;
  h = hash_combine(h, static_cast<uint64_t>(kind));
  h = hash_combine(h, static_cast<uint64_t>(dtype));
  h = hash_combine(h, static_cast<uint64_t>(ndim));
  h = hash_combine(h, shape_hash);
  h = hash_combine(h, static_cast<uint64_t>(naxes));
  for (int i = 0; i < naxes; ++i) h = hash_combine(h, static_cast<uint64_t>(axes[i]));
  for (int64_t p : params) h = hash_combine(h, static_cast<uint64_t>(p));
  return hash_combine(h, extra_hash);
}

std::string OpSignature::describe(const Mesh& mesh) const {
  std::string axes_str;
  for (int i = 0; i < naxes; ++i) {
    if (i) axes_str += ", ";
    axes_str += fmt::format("'{}'", mesh.axis_names()[axes[i]]);
  }
  if (naxes != 1) axes_str = "(" + axes_str + ")";
  return describe_over(axes_str);
}

std::string OpSignature::describe_over(const std::string& axes_str) const {
  if (kind == CollectiveKind::kBarrier) return fmt::format("barrier over {}", axes_str);
  std::string dims_str;
  for (int d = 0; d < ndim; ++d) {
    if (d) dims_str += ",";
    dims_str += d < kMaxDims ? std::to_string(dims[d]) : "...";
  }
  if (is_reduction(kind) && params[0] > 1) {
    return fmt::format("{} of {} {} arrays ({} elements in all) over {}", collective_name(kind),
                       params[0], dtype_short_name(dtype), dims[0], axes_str);
  }
  return fmt::format("{} of {}[{}] over {}", collective_name(kind), dtype_short_name(dtype),
                     dims_str, axes_str);
}

}  // namespace spmd::internal
