// SPDX-License-Identifier: Apache-2.0
// The process layout and the cross-process communicator hook (processes.h).
#include "exec/processes.h"

#include <fmt/format.h>

#include <mutex>

#include "spmd/errors.h"

namespace spmd::internal {
namespace {

std::mutex& mu() {
  static std::mutex m;
  return m;
}
ProcessLayout& layout_slot() {
  static ProcessLayout layout;
  return layout;
}
CrossProcessFactory& factory_slot() {
  static CrossProcessFactory factory;
  return factory;
}

}  // namespace

const ProcessLayout& process_layout() { return layout_slot(); }

void set_process_layout(ProcessLayout layout) {
  std::lock_guard<std::mutex> lock(mu());
  layout_slot() = layout;
}

void reset_process_layout() {
  std::lock_guard<std::mutex> lock(mu());
  layout_slot() = ProcessLayout{};
  factory_slot() = nullptr;
}

void set_cross_process_factory(CrossProcessFactory factory) {
  std::lock_guard<std::mutex> lock(mu());
  factory_slot() = std::move(factory);
}

const CrossProcessFactory& cross_process_factory() {
  std::lock_guard<std::mutex> lock(mu());
  if (!factory_slot()) {
    throw RuntimeError(
        "a collective spans devices of several processes, but this process has no cross-process "
        "communicators: call spmd::distributed::initialize before using the devices.");
  }
  return factory_slot();
}

}  // namespace spmd::internal
