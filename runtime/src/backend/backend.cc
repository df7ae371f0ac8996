// Backend registry and Buffer (backend.h).
#include "backend/backend.h"

#include "cpu/cpu_backend.h"
#include "spmd/errors.h"

namespace spmd::internal {

Backend& backend_for(const Device& device) {
  switch (device.platform) {
    case Platform::kCpu:
      return cpu_backend();
    case Platform::kCuda:
      break;
  }
  throw NotImplementedError("no backend for device " + device.str() +
                            ": this build has only the CPU backend");
}

Buffer::Buffer(Device device, size_t bytes)
    : device_(device), bytes_(bytes), data_(backend_for(device).allocate(device, bytes)) {}

Buffer::~Buffer() { backend_for(device_).deallocate(device_, data_, bytes_); }

}  // namespace spmd::internal
