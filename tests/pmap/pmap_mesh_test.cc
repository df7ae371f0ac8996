// SPDX-License-Identifier: Apache-2.0
// spmd::pmap_mesh raises exactly the error the legacy pmap raises for the same call (the code
// spmd-migrate writes relies on it), and builds the mesh legacy pmap runs on.
#include "spmd/pmap_mesh.h"

#include <algorithm>
#include <functional>

#include "spmd/pmap.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;

// The message of the ValueError `fn` raises, or "" when it raises none.
std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

Array same(const Array& x) { return x; }
Array pair(const Array& x, const Array& y) { return x + y; }
Array scaled(int k, const Array& x) { return x * k; }

std::vector<Device> first(int n) {
  std::vector<Device> d = devices();
  return {d.begin(), d.begin() + n};
}

// `message` without its "[on cpu:N] " prefix. Legacy pmap raises a nest's inner errors inside
// the outer bodies: each body raises its own, and one that raised before another started
// (aborting the call) is reported, so which device the prefix names depends on timing.
std::string without_device(const std::string& message) {
  if (message.rfind("[on ", 0) != 0) return message;
  return message.substr(message.find("] ") + 2);
}

// Expects `migrated` (the pmap_mesh call a legacy call migrates to) to raise what `legacy` raises.
void same_error(const char* what, const std::function<void()>& legacy,
                const std::function<void()>& migrated) {
  std::string expected = error_of(legacy);
  EXPECT_FALSE(expected.empty()) << what << ": legacy pmap raised nothing";
  std::string actual = error_of(migrated);
  EXPECT_EQ(without_device(actual), without_device(expected)) << what;
  EXPECT_EQ(actual.rfind("[on cpu:", 0), expected.rfind("[on cpu:", 0)) << what << ": " << actual;
}

TEST(PmapMesh, RaisesLegacyErrors) {
  Array scalar = farange(1, {});
  Array x4 = farange(8, {4, 2});
  same_error(
      "rank 0", [&] { legacy::pmap(same, "i")(scalar); }, [&] { pmap_mesh({scalar}, {{"i"}}); });
  same_error(
      "in_axes beyond the rank", [&] { legacy::pmap(same, "i", {.in_axes = {2}})(x4); },
      [&] {
        pmap_mesh({x4}, {{"i", {2}}});
      });
  Array x16 = farange(32, {16, 2});
  same_error(
      "more elements than devices", [&] { legacy::pmap(same, "i")(x16); },
      [&] { pmap_mesh({x16}, {{"i"}}); });
  Array x3 = farange(6, {3, 2});
  same_error(
      "sizes disagree", [&] { legacy::pmap(pair, "i")(x4, x3); },
      [&] {
        pmap_mesh({x4, x3}, {{"i"}});
      });
  same_error(
      "axis_size disagrees", [&] { legacy::pmap(same, "i", {.axis_size = 3})(x4); },
      [&] { pmap_mesh({x4}, {{.name = "i", .size = 3}}); });
  same_error(
      "devices of the wrong size", [&] { legacy::pmap(same, "i", {.devices = first(3)})(x4); },
      [&] { pmap_mesh({x4}, {{"i"}}, {.devices = first(3)}); });
  same_error(
      "a static argument first", [&] { legacy::pmap(scaled, "i")(2, scalar); },
      [&] { pmap_mesh({scalar}, {{"i"}}, {.arg_positions = {1}}); });
}

TEST(PmapMesh, RaisesLegacyErrorsOfNests) {
  Array grid = farange(48, {4, 4, 3});
  same_error(
      "the grid needs 16 devices", [&] { legacy::pmap(legacy::pmap(same, "j"), "i")(grid); },
      [&] {
        pmap_mesh({grid}, {{"i"}, {"j"}});
      });
  Array x4 = farange(8, {4, 2});
  same_error(
      "inner in_axes beyond the rank",
      [&] { legacy::pmap(legacy::pmap(same, "j", {.in_axes = {2}}), "i")(x4); },
      [&] {
        pmap_mesh({x4}, {{"i"}, {"j", {2}}});
      });
  Array cube = farange(8, {2, 2, 2});
  same_error(
      "one axis name twice", [&] { legacy::pmap(legacy::pmap(same, "i"), "i")(cube); },
      [&] {
        pmap_mesh({cube}, {{"i"}, {"i"}});
      });
  same_error(
      "outer devices cover the grid",
      [&] { legacy::pmap(legacy::pmap(same, "j"), "i", {.devices = first(4)})(grid); },
      [&] {
        pmap_mesh({grid}, {{"i"}, {"j"}}, {.devices = first(4)});
      });
}

TEST(PmapMesh, BuildsLegacyMesh) {
  EXPECT_EQ(pmap_mesh({farange(8, {4, 2})}, {{"i"}}), make_mesh({4}, {"i"}));
  EXPECT_EQ(pmap_mesh({farange(8, {2, 4}), farange(3, {3})}, {{"i", {1, std::nullopt}}}),
            make_mesh({4}, {"i"}));
  EXPECT_EQ(pmap_mesh({farange(24, {2, 3, 4})}, {{"i"}, {"j", {1}}}),
            make_mesh({2, 4}, {"i", "j"}));
  std::vector<Device> reversed = first(4);
  std::reverse(reversed.begin(), reversed.end());
  EXPECT_EQ(pmap_mesh({farange(8, {4, 2})}, {{.name = "i", .size = 4}}, {.devices = reversed}),
            Mesh(reversed, {4}, {"i"}));
}

TEST(PmapMesh, RejectsBadUse) {
  expect_error<ValueError>([] { pmap_mesh({farange(4, {4})}, {}); }, {"at least one axis"});
  expect_error<ValueError>(
      [] {
        pmap_mesh({farange(4, {4})}, {{"i"}}, {.arg_positions = {0, 1}});
      },
      {"1 Array arguments but 2 arg_positions"});
}

}  // namespace
}  // namespace spmd
