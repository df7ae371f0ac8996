// SPDX-License-Identifier: Apache-2.0
// Internal to the tests: the "test" platform, a second backend that lives outside the library and
// registers through the backend registry like any other, so that the conformance suite can prove
// that shard_map, every collective and both pmap paths work through the seam alone.
//
// Deliberately unlike the CPU backend: its devices never alias each other's memory (every block
// and shard crosses devices through Backend::copy), fresh allocations are filled with a garbage
// pattern, and its communicator is a mutex-and-condition-variable mailbox that copies every input
// (no zero-copy, no futexes) and computes each output under the lock in rank order. Kernels are
// the CPU backend's, looked up through the registry: its memory is host memory too.
//
// SPMD_TEST_BACKEND_DEVICES_PER_NODE=k (default 1) puts its devices in nodes of k, as the CUDA
// backend's logical devices sit on GPUs: groups that span nodes with several members on one then
// run through backend/hierarchical_communicator.h (mailboxes within each node and between the
// nodes' leaders), so the collectives suite checks that composition here, where no GPU is needed.
#pragma once

#include "spmd/device.h"

namespace spmd::testing {

// The test platform ("test"), registered with a lower preference than "cpu" (so it is never the
// default platform) before main runs. SPMD_TEST_BACKEND_DEVICES sets its device count (default 8).
inline constexpr Platform kTestPlatform{"test"};

// How many allocations of the test backend are live (to check that nothing leaks).
long test_backend_live_buffers();
// How many communicator handles the test backend has made (to check that they are cached).
long test_backend_handles_made();

}  // namespace spmd::testing
