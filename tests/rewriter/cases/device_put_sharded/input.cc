// Rule device-put-sharded: device_put_sharded(xs, devices) becomes the device_put of the stacked
// arrays over a one-axis mesh of those devices (docs/migration.md).
#include <spmd/pmap.h>
#include <spmd/spmd.h>

#include <vector>

#define SHARD(xs) spmd::device_put_sharded(xs, spmd::devices())

namespace app {

spmd::Array on_variable(const std::vector<spmd::Array>& xs, const std::vector<spmd::Device>& d) {
  return spmd::device_put_sharded(xs, d);
}

spmd::Array on_braced_list(const spmd::Array& a, const spmd::Array& b) {
  return spmd::device_put_sharded({a, b}, {spmd::devices()[0], spmd::devices()[1]});
}

spmd::Array in_macro(const std::vector<spmd::Array>& xs) { return SHARD(xs); }
// CHECK-MESSAGES: input.cc:[[@LINE-1]]:67: warning: this call is written inside a macro body, so it is left as is; migrate it by hand: spmd::device_put(spmd::stack(xs), spmd::NamedSharding(spmd::Mesh(devices, {n}, {"x"}), spmd::P("x"))) [spmd-migrate-device-put-sharded]

}  // namespace app
