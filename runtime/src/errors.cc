// spmd::Error (spmd/errors.h).
#include "spmd/errors.h"

namespace spmd {

void Error::set_device(int device_id, const std::string& device_str) {
  if (device_) return;
  device_ = device_id;
  message_ = "[on " + device_str + "] " + message_;
}

}  // namespace spmd
