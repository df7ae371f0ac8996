// SPDX-License-Identifier: Apache-2.0
// What goes wrong in SPMD programs and how spmd reports it: every error is an exception derived
// from spmd::Error, of the class JAX raises for the same mistake (ValueError, TypeError,
// NameError, ...), with a message naming the argument, the spec, the mesh and the fix. Errors
// raised inside a body are rethrown to the caller with the device recorded; a device that fails
// never leaves the others hanging in a collective.
//
//   SPMD_CPU_DEVICES=8 build/examples/error_handling/error_handling
#include <spmd/spmd.h>

#include <stdexcept>
#include <string>

namespace {

using spmd::Array;
using spmd::P;

// The message without the "[on cpu:N] " prefix of errors raised on a device (which device
// reports first is not fixed; the rest of the message is).
std::string without_device(const spmd::Error& e) {
  std::string text = e.what();
  if (e.device() && text.starts_with("[on ")) text = text.substr(text.find("] ") + 2);
  return text;
}

}  // namespace

int main() {
  spmd::Mesh mesh = spmd::make_mesh({4}, {"i"});
  auto total = spmd::shard_map([](const Array& b) { return spmd::psum(b, "i"); }, mesh, P("i"), P(),
                               {.name = "total"});

  // 1. A shape the mesh does not divide: checked before anything runs.
  try {
    total(spmd::arange(6));
  } catch (const spmd::ValueError& e) {
    fmt::print("1. ValueError:\n{}\n\n", e.what());
  }

  // 2. A collective over an axis the call does not bind.
  auto unbound = spmd::shard_map([](const Array& b) { return spmd::psum(b, "j"); }, mesh, P("i"),
                                 P("i"), {.name = "unbound"});
  try {
    unbound(spmd::arange(8));
  } catch (const spmd::NameError& e) {
    fmt::print("2. NameError (raised on a device: {}):\n{}\n\n", e.device().has_value(),
               without_device(e));
  }

  // 3. An exception of the user's own inside a body: wrapped in DeviceError, which names the
  //    device and nests the original; the other devices, waiting in psum, are released.
  auto failing = spmd::shard_map(
      [](const Array& b) {
        if (spmd::axis_index("i").item<int32_t>() == 2) {
          throw std::runtime_error("bad input block");
        }
        return spmd::psum(b, "i");
      },
      mesh, P("i"), P(), {.name = "failing"});
  try {
    failing(spmd::arange(8));
  } catch (const spmd::DeviceError& e) {
    fmt::print("3. DeviceError on device {}:\n{}\n", e.device() ? e.device()->str() : "none",
               e.what());
    try {
      std::rethrow_if_nested(e);
    } catch (const std::runtime_error& original) {
      fmt::print("   nested: std::runtime_error(\"{}\")\n\n", original.what());
    }
  }

  // 4. Devices that disagree on the collective they run (a data-dependent branch): every
  //    participant gets CollectiveMismatch at once instead of a deadlock. (Two devices here:
  //    with more, which of the psum devices the message names depends on timing.)
  auto diverging = spmd::shard_map(
      [](const Array& b) {
        bool first = spmd::axis_index("i").item<int32_t>() == 0;
        return first ? spmd::pmax(b, "i") : spmd::psum(b, "i");
      },
      spmd::make_mesh({2}, {"i"}), P("i"), P(), {.name = "diverging"});
  try {
    diverging(spmd::arange(8));
  } catch (const spmd::CollectiveMismatch& e) {
    fmt::print("4. CollectiveMismatch:\n{}\n\n", without_device(e));
  }

  // 5. Every error derives from spmd::Error, so one handler can catch them all.
  try {
    spmd::make_mesh({16}, {"i"});
  } catch (const spmd::Error& e) {
    fmt::print("5. spmd::Error: {}\n", e.what());
  }
  return 0;
}
