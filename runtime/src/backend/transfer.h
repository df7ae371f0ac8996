// SPDX-License-Identifier: Apache-2.0
// Internal: copies between devices of any platforms, for shard assembly and block formation.
#pragma once

#include "backend/backend.h"

namespace spmd::internal {

// dst[i] = src[i] for views of equal shape and dtype (any strides), src in memory of `from` and
// dst in memory of `to`. Within one platform the backend copies directly (Backend::copy); across
// platforms the data is staged through host memory.
void copy_between(const Device& from, const ConstView& src, const Device& to, const MutView& dst);

}  // namespace spmd::internal
