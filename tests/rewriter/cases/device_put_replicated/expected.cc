// Rule device-put-replicated: device_put_replicated(x, devices) becomes the device_put of n
// stacked copies over a one-axis mesh of those devices (docs/migration.md).
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <vector>

namespace app {

spmd::Array on_variable(const spmd::Array& x, const std::vector<spmd::Device>& devs) {
  return spmd::device_put(
      spmd::stack(std::vector<spmd::Array>(devs.size(), x)),
      spmd::NamedSharding(spmd::Mesh(devs, {static_cast<int64_t>(devs.size())}, {"x"}),
                          spmd::P("x")));
}

spmd::Array on_all_devices(const spmd::Array& x) {
  return spmd::device_put(
      spmd::stack(std::vector<spmd::Array>(spmd::devices().size(), x * 2)),
      spmd::NamedSharding(
          spmd::Mesh(spmd::devices(), {static_cast<int64_t>(spmd::devices().size())}, {"x"}),
          spmd::P("x")));
}

// A device list computed in place is evaluated once, as in the original call.
spmd::Array on_expression(const spmd::Array& x, const std::vector<spmd::Device>& devs) {
  return [&](const std::vector<spmd::Device>& mesh_devices) {
    return spmd::device_put(
        spmd::stack(std::vector<spmd::Array>(mesh_devices.size(), x)),
        spmd::NamedSharding(
            spmd::Mesh(mesh_devices, {static_cast<int64_t>(mesh_devices.size())}, {"x"}),
            spmd::P("x")));
  }(std::vector<spmd::Device>(devs.begin(), devs.begin() + 2));
}

}  // namespace app
