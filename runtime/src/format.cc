// SPDX-License-Identifier: Apache-2.0
// operator<< for spmd's value types: each prints the type's str() (Array's lives in array.cc).
#include <ostream>

#include "spmd/device.h"
#include "spmd/dtype.h"
#include "spmd/mesh.h"
#include "spmd/partition_spec.h"
#include "spmd/sharding.h"

namespace spmd {

std::ostream& operator<<(std::ostream& os, DType dt) { return os << dtype_name(dt); }
std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }
std::ostream& operator<<(std::ostream& os, const Mesh& mesh) { return os << mesh.str(); }
std::ostream& operator<<(std::ostream& os, const PartitionSpec& spec) { return os << spec.str(); }
std::ostream& operator<<(std::ostream& os, const NamedSharding& sharding) {
  return os << sharding.str();
}
std::ostream& operator<<(std::ostream& os, const Sharding& sharding) {
  return os << sharding.str();
}

}  // namespace spmd
