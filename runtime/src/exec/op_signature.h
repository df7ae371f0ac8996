// SPDX-License-Identifier: Apache-2.0
// Internal: what one device says about the collective it is entering. Devices of a call compare
// signatures (by hash) at every collective, so that a device running a different collective, or
// the same one on a different dtype, shape, axes or parameters, is caught at once instead of
// hanging or exchanging garbage.
#pragma once

#include <cstdint>
#include <string>

#include "spmd/dtype.h"
#include "spmd/mesh.h"

namespace spmd::internal {

enum class CollectiveKind : uint8_t {
  kPsum,
  kPmean,
  kPmax,
  kPmin,
  kAllGather,
  kPsumScatter,
  kPpermute,
  kPshuffle,
  kPbroadcast,
  kAllToAll,
  kBarrier,
};

const char* collective_name(CollectiveKind kind);
// psum, pmean, pmax or pmin: for these params[0] > 1 means that many arrays packed in one.
bool is_reduction(CollectiveKind kind);

// A plain value (no allocation), so it is cheap to record on every collective.
struct OpSignature {
  static constexpr int kMaxDims = 8;
  static constexpr int kMaxAxes = 8;

  CollectiveKind kind = CollectiveKind::kBarrier;
  DType dtype = DType::kFloat32;
  int ndim = 0;
  int64_t dims[kMaxDims] = {};  // the first kMaxDims extents; the rest only enter shape_hash
  uint64_t shape_hash = 0;
  int naxes = 0;
  int8_t axes[kMaxAxes] = {};  // mesh axis indices in the caller's order
  int64_t params[4] = {};      // op-specific (axis, tiled, split/concat axes, ...)
  uint64_t extra_hash = 0;     // axis_index_groups and permutations

  void set_shape(const Shape& shape);
  uint64_t hash() const;
  // "psum of f32[4,2] over 'i'", the form used in mismatch and timeout messages.
  std::string describe(const Mesh& mesh) const;
  // The same with the axes already written ("'b'"), for axes that are not mesh axes (vmap's).
  std::string describe_over(const std::string& axes_str) const;
};

// Mixes `value` into `seed` (for shapes, groups and permutations).
uint64_t hash_combine(uint64_t seed, uint64_t value);

}  // namespace spmd::internal
