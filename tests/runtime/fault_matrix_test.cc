// SPDX-License-Identifier: Apache-2.0
// The fault matrix (docs/design.md, "Faults"): one SPMD program (two collectives over a 2x2 mesh)
// with one fault injected on one device per cell: an exception before, inside or after a
// collective, a non-std exception, a mismatched op, dtype, shape or axis, a missing or extra
// participant, a body stuck in user code and one slow past the deadline. Each cell asserts what
// every device's body saw, the error class (and device) the caller gets, the time to the error,
// and that the next correct call in the same process returns the right value. Every cell runs on
// the CPU backend, the test backend of tests/backends/ and the CUDA backend (skipped, saying why,
// without 4 CUDA devices: run scripts/gpu-check.sh).
#include <array>
#include <chrono>
#include <mutex>
#include <ostream>
#include <thread>

#include "test_backend/test_backend.h"
#include "test_util.h"

namespace spmd {
namespace {

using namespace spmd::testing;
using Clock = std::chrono::steady_clock;

enum class Fault {
  kThrowBefore1,    // std::runtime_error before collective 1
  kThrowBefore2,    // ... between collectives 1 and 2
  kThrowInside1,    // collective 1 itself rejects its arguments on that device (ValueError)
  kThrowAfter2,     // ... after the last collective
  kNonStd,          // throws an int before collective 1
  kMismatchOp,      // pmax where the others run psum (collective 1)
  kMismatchDtype,   // float64 where the others sum int32 (collective 2)
  kMismatchShape,   // a block twice as long (collective 1)
  kMismatchAxes,    // over 'j' where the others reduce over 'i' (collective 1)
  kMissingBefore1,  // returns before collective 1
  kMissingBefore2,  // returns between collectives 1 and 2
  kExtraAtEnd,      // runs a third collective the others do not
  kStuckBefore1,    // held in user code before collective 1, past the deadline
  kStuckBetween,    // ... between collectives 1 and 2
  kSlow,            // sleeps three deadlines between collectives 1 and 2, then goes on
};

struct Cell {
  const char* name;
  Fault fault;
  int device;               // mesh position of the faulty device
  const char* caller;       // the error class the caller gets
  const char* faulty_sees;  // what the faulty device's body sees
  const char* others_see;   // what every other device's body sees ("a|b": either)
  bool deadline;            // the error comes at the deadline (else at once)
  const char* phrase;       // a phrase of the caller's message
};

constexpr double kDeadline = 0.3;  // for the cells that time out
constexpr double kLong = 5.0;      // for the others: reaching it is a failure

const Cell kCells[] = {
    {"ThrowBefore1", Fault::kThrowBefore1, 0, "DeviceError", "own", "aborted", false,
     "raised std::runtime_error: injected"},
    {"ThrowBefore2", Fault::kThrowBefore2, 3, "DeviceError", "own", "aborted", false, "injected"},
    {"ThrowInside1", Fault::kThrowInside1, 3, "ValueError", "own", "aborted", false,
     "all_gather axis 5 is out of bounds"},
    // A device still inside its last collective when the abort lands sees the abort.
    {"ThrowAfter2", Fault::kThrowAfter2, 0, "DeviceError", "own", "none|aborted", false,
     "injected"},
    {"NonStd", Fault::kNonStd, 2, "DeviceError", "own", "aborted", false,
     "raised a non-std::exception"},
    {"MismatchOp", Fault::kMismatchOp, 3, "CollectiveMismatch", "mismatch", "mismatch", false,
     "pmax of i32[1,2] over 'i'"},
    {"MismatchDtype", Fault::kMismatchDtype, 0, "CollectiveMismatch", "mismatch", "mismatch", false,
     "psum of f64[1,2] over ('i', 'j')"},
    {"MismatchShape", Fault::kMismatchShape, 1, "CollectiveMismatch", "mismatch", "mismatch", false,
     "psum of i32[2,2] over 'i'"},
    {"MismatchAxes", Fault::kMismatchAxes, 2, "CollectiveMismatch", "mismatch", "mismatch", false,
     "psum of i32[1,2] over 'j'"},
    {"MissingBefore1", Fault::kMissingBefore1, 3, "CollectiveMismatch", "none", "mismatch", false,
     "' after 0 collectives while"},
    {"MissingBefore2", Fault::kMissingBefore2, 0, "CollectiveMismatch", "none", "mismatch", false,
     "' after 1 collectives while"},
    {"ExtraAtEnd", Fault::kExtraAtEnd, 1, "CollectiveMismatch", "mismatch", "none|mismatch", false,
     "after 2 collectives"},
    {"StuckBefore1", Fault::kStuckBefore1, 3, "CollectiveTimeout", "timeout", "timeout", true,
     "is running user code before its first collective"},
    {"StuckBetween", Fault::kStuckBetween, 2, "CollectiveTimeout", "timeout", "timeout", true,
     "is running user code after collective #1"},
    {"Slow", Fault::kSlow, 1, "CollectiveTimeout", "timeout", "timeout", true,
     "is running user code after collective #1"},
};

// How gtest prints a cell in a test's name (the bytes of its pointers otherwise, which ASLR moves
// between runs).
void PrintTo(const Cell& cell, std::ostream* os) { *os << cell.name; }

// What each device's body saw, by mesh position.
struct Seen {
  std::mutex mu;
  std::array<std::string, 4> kinds;
  void record(int position, std::string kind) {
    std::lock_guard<std::mutex> lock(mu);
    kinds[position] = std::move(kind);
  }
  std::string at(int position) {
    std::lock_guard<std::mutex> lock(mu);
    return kinds[position];
  }
};

// The program: s1 = psum(b, 'i'); s2 = psum(2 * s1, ('i', 'j')), with the cell's fault on its
// device. Each device's block is a row of arange(8).reshape(4, 2), so s2 = [[48, 64]].
Array program(const Array& b, Fault fault, bool faulty, Holder& holder) {
  auto is = [&](Fault f) { return faulty && fault == f; };
  if (is(Fault::kThrowBefore1)) throw std::runtime_error("injected");
  if (is(Fault::kNonStd)) throw 7;
  if (is(Fault::kMissingBefore1)) return zeros_like(b);
  if (is(Fault::kStuckBefore1)) holder.hold_unless_on_caller();
  Array s1 = is(Fault::kThrowInside1)    ? all_gather(b, "i", {.axis = 5})
             : is(Fault::kMismatchOp)    ? pmax(b, "i")
             : is(Fault::kMismatchShape) ? psum(concatenate({b, b}), "i")
             : is(Fault::kMismatchAxes)  ? psum(b, "j")
                                         : psum(b, "i");
  if (is(Fault::kThrowBefore2)) throw std::runtime_error("injected");
  if (is(Fault::kMissingBefore2)) return s1;
  if (is(Fault::kStuckBetween)) holder.hold_unless_on_caller();
  if (is(Fault::kSlow)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(3000 * kDeadline)));
  }
  Array x2 = s1 * 2;
  if (is(Fault::kMismatchDtype)) x2 = x2.astype(DType::kFloat64);
  Array s2 = psum(x2, {"i", "j"});
  if (is(Fault::kThrowAfter2)) throw std::runtime_error("injected");
  if (is(Fault::kExtraAtEnd)) s2 = psum(s2, {"i", "j"});
  return s2;
}

// Whether `kind` is one of the '|'-separated `kinds`.
bool one_of(const std::string& kind, const std::string& kinds) {
  return ("|" + kinds + "|").find("|" + kind + "|") != std::string::npos;
}

std::string kind_of(const std::exception& e) {
  if (dynamic_cast<const CollectiveMismatch*>(&e)) return "mismatch";
  if (dynamic_cast<const CollectiveTimeout*>(&e)) return "timeout";
  if (dynamic_cast<const DeviceUnavailable*>(&e)) return "unavailable";
  if (std::string(e.what()).find("the mapped call was aborted") != std::string::npos) {
    return "aborted";
  }
  return "own";
}

std::string class_of(const Error& e) {
  if (dynamic_cast<const DeviceError*>(&e)) return "DeviceError";
  if (dynamic_cast<const CollectiveMismatch*>(&e)) return "CollectiveMismatch";
  if (dynamic_cast<const CollectiveTimeout*>(&e)) return "CollectiveTimeout";
  if (dynamic_cast<const DeviceUnavailable*>(&e)) return "DeviceUnavailable";
  if (dynamic_cast<const ValueError*>(&e)) return "ValueError";
  return "Error";
}

class FaultMatrix : public ::testing::TestWithParam<std::tuple<Platform, Cell>> {
 protected:
  void SetUp() override {
    const std::string reason = platform_unavailable(platform(), 4);
    if (!reason.empty()) GTEST_SKIP() << reason;
  }
  Platform platform() const { return std::get<0>(GetParam()); }
  const Cell& cell() const { return std::get<1>(GetParam()); }
  Mesh mesh() const { return make_mesh({2, 2}, {"i", "j"}, devices(platform().name())); }
  Device device(int position) const { return mesh().devices()[position]; }
  // The program without faults.
  Array correct() const {
    Holder unused;
    return shard_map([&](const Array& b) { return program(b, cell().fault, false, unused); },
                     mesh(), P({"i", "j"}), P())(iarange(8, {4, 2}));
  }
};

TEST_P(FaultMatrix, ErrorOnEveryDeviceTimeAndRecovery) {
  const Cell& c = cell();
  Seen seen;
  Holder holder;
  const double deadline = c.deadline ? kDeadline : kLong;
  auto f = shard_map(
      [&](const Array& b) {
        const int me = static_cast<int>(axis_index({"i", "j"}).item<int32_t>());
        try {
          Array out = program(b, c.fault, me == c.device, holder);
          seen.record(me, "none");
          return out;
        } catch (const std::exception& e) {
          seen.record(me, kind_of(e));
          throw;
        } catch (...) {
          seen.record(me, "own");
          throw;
        }
      },
      mesh(), P({"i", "j"}), P(), {.check_vma = false, .collective_timeout_s = deadline});
  const bool holds = c.fault == Fault::kStuckBefore1 || c.fault == Fault::kStuckBetween;

  std::string caller_class = "none";
  std::string message;
  std::optional<Device> error_device;
  double elapsed = 0;
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto start = Clock::now();
    try {
      f(iarange(8, {4, 2}));
    } catch (const Error& e) {
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
      caller_class = class_of(e);
      message = e.what();
      error_device = e.device();
    }
    if (!holds || holder.held) break;  // a held body ran on the caller's thread: again
  }
  if (holds) {
    ASSERT_TRUE(holder.held) << "the faulty body ran on the calling thread every time";
  }

  EXPECT_EQ(caller_class, c.caller) << message;
  EXPECT_THAT(message, ::testing::HasSubstr(c.phrase));
  ASSERT_TRUE(error_device.has_value()) << message;
  if (c.deadline) {
    EXPECT_NE(*error_device, device(c.device)) << "a waiting device reports the timeout";
    EXPECT_THAT(message, ::testing::HasSubstr(device(c.device).str() + " is running user code"));
    EXPECT_GE(elapsed, kDeadline);
    EXPECT_LT(elapsed, kDeadline + 2.0);
  } else {
    if (std::string(c.caller) != "CollectiveMismatch") {
      EXPECT_EQ(*error_device, device(c.device));
    }
    EXPECT_LT(elapsed, 2.0) << "the fault is reported at once, not at the deadline";
  }

  if (holds) {
    // The held device is quarantined; the others were released.
    expect_error<DeviceUnavailable>([&] { correct(); },
                                    {"UNAVAILABLE: " + device(c.device).str() + " is quarantined"});
    for (int p = 0; p < 4; ++p) {
      if (p != c.device) {
        EXPECT_TRUE(one_of(seen.at(p), c.others_see)) << "device " << p << ": " << seen.at(p);
      }
    }
    holder.release = true;
  }
  // The next correct call returns the right value (once a held or slow body has returned).
  EXPECT_ARRAY_EQ(when_available([&] { return correct(); }), ints({48, 64}, {1, 2}));
  for (int p = 0; p < 4; ++p) {
    EXPECT_TRUE(one_of(seen.at(p), p == c.device ? c.faulty_sees : c.others_see))
        << "device " << p << ": " << seen.at(p);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cells, FaultMatrix,
    ::testing::Combine(::testing::Values(Platform::kCpu, testing::kTestPlatform, Platform::kCuda),
                       ::testing::ValuesIn(kCells)),
    [](const auto& p) {
      return std::string(std::get<0>(p.param).name()) + "_" + std::get<1>(p.param).name;
    });

}  // namespace
}  // namespace spmd
