// SPDX-License-Identifier: Apache-2.0
// Internal: where this process stands among the processes of a multi-process run, and how the core
// gets communicators for groups that span processes. Both are set by spmd::distributed::initialize
// (runtime/src/distributed/) before the devices are first used; a single-process run keeps the
// defaults (one process, no cross-process factory).
//
// Global device ids are ordered by process: with L devices per process, process p owns the ids
// [p*L, (p+1)*L). Each backend still counts only the devices of this process (device_count()).
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "backend/backend.h"

namespace spmd::internal {

struct ProcessLayout {
  int index = 0;  // this process, 0..count-1
  int count = 1;  // processes in the run
};

// The layout in force (one process until distributed::initialize sets another).
const ProcessLayout& process_layout();
// ValueError when the devices were already used with another layout.
void set_process_layout(ProcessLayout layout);
// Back to one process (distributed::shutdown).
void reset_process_layout();

// True when `device` belongs to this process.
inline bool is_addressable(const Device& device) {
  return device.process_index == process_layout().index;
}

// Makes rank `rank`'s handle on a communicator whose members live in more than one process;
// `rank` is a member of this process. Same contract as Backend::make_communicator.
using CrossProcessFactory = std::function<std::unique_ptr<Communicator>(
    const std::vector<Device>& members, int rank, Rendezvous& rendezvous, Cancel& cancel)>;
void set_cross_process_factory(CrossProcessFactory factory);
// The installed factory; RuntimeError when none is (the group spans processes but
// distributed::initialize did not run, which the device list makes impossible).
const CrossProcessFactory& cross_process_factory();

}  // namespace spmd::internal
