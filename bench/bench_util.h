// SPDX-License-Identifier: Apache-2.0
// Timing helpers shared by the benchmarks (docs/benchmarks.md, "Method"): calibrated repetitions,
// medians and minima, and a small command-line parser.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace spmd::bench {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// Runs `body(k)` (which performs k iterations) and returns seconds per iteration.
inline double time_per_iteration(const std::function<void(int64_t)>& body, int64_t k) {
  auto start = Clock::now();
  body(k);
  return seconds(Clock::now() - start) / static_cast<double>(k);
}

// Doubles k until one call of body(k) lasts at least `target` seconds (after one warm-up).
inline int64_t calibrate(const std::function<void(int64_t)>& body, double target) {
  body(1);
  int64_t k = 1;
  while (k < (int64_t{1} << 24)) {
    auto start = Clock::now();
    body(k);
    if (seconds(Clock::now() - start) >= target) break;
    k *= 2;
  }
  return k;
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

inline double minimum(const std::vector<double>& v) {
  return v.empty() ? 0 : *std::min_element(v.begin(), v.end());
}

// "1K", "64K", "1M": sizes as nccl-tests prints them.
inline std::string size_label(int64_t bytes) {
  if (bytes >= (1 << 20) && bytes % (1 << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes >= (1 << 10) && bytes % (1 << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes) + "B";
}

// Parses "64K", "4M", "128" into bytes.
inline int64_t parse_size(const std::string& text) {
  int64_t value = std::strtoll(text.c_str(), nullptr, 10);
  char unit = text.empty() ? ' ' : text.back();
  if (unit == 'K' || unit == 'k') return value << 10;
  if (unit == 'M' || unit == 'm') return value << 20;
  if (unit == 'G' || unit == 'g') return value << 30;
  return value;
}

inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The value of "--name=value" in argv, or `fallback`.
inline std::string flag(int argc, char** argv, const std::string& name,
                        const std::string& fallback) {
  std::string prefix = "--" + name + "=";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind(prefix, 0) == 0) return arg.substr(prefix.size());
    if (arg == "--" + name) return "1";
  }
  return fallback;
}

// The settings every small benchmark takes: --quick (a smoke run for CTest: 3 reps of short
// calibrated runs) and --reps=N.
struct RunSettings {
  bool quick = false;     // smoke run
  int reps = 7;           // timed repetitions; the median is reported
  double target_s = 0.2;  // seconds one calibrated repetition lasts at least
};

inline RunSettings run_settings(int argc, char** argv) {
  RunSettings s;
  s.quick = flag(argc, argv, "quick", "") == "1";
  s.reps = std::stoi(flag(argc, argv, "reps", s.quick ? "3" : "7"));
  s.target_s = s.quick ? 0.02 : 0.2;
  return s;
}

}  // namespace spmd::bench
