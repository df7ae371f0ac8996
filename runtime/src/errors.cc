// SPDX-License-Identifier: Apache-2.0
// spmd::Error (spmd/errors.h).
#include "spmd/errors.h"

namespace spmd {

void Error::set_device(const Device& device) {
  if (device_) return;
  device_ = device;
  message_ = "[on " + device.str() + "] " + message_;
}

}  // namespace spmd
