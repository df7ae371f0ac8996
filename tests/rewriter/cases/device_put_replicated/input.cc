// Rule device-put-replicated: device_put_replicated(x, devices) becomes the device_put of n
// stacked copies over a one-axis mesh of those devices (docs/migration.md).
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <vector>

namespace app {

spmd::Array on_variable(const spmd::Array& x, const std::vector<spmd::Device>& devs) {
  return spmd::device_put_replicated(x, devs);
}

spmd::Array on_all_devices(const spmd::Array& x) {
  return spmd::device_put_replicated(x * 2, spmd::devices());
}

// A device list computed in place is evaluated once, as in the original call.
spmd::Array on_expression(const spmd::Array& x, const std::vector<spmd::Device>& devs) {
  return spmd::device_put_replicated(x, std::vector<spmd::Device>(devs.begin(), devs.begin() + 2));
}

}  // namespace app
