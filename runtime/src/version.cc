// SPDX-License-Identifier: Apache-2.0
// The library's version, fixed when the library is compiled (see spmd/version.h).
#include "spmd/version.h"

namespace spmd {

std::string_view version() { return SPMD_VERSION_STRING; }

}  // namespace spmd
