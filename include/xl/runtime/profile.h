// Where one stretch of work spends its time, from LibTorch's Kineto profiler: on a GPU the
// kernels (the device's busy time against the wall time tells a launch-bound step from a
// compute-bound one), on the CPU the operators. xl-bench --profile lists them per mode.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace xl::runtime {

struct ProfileEntry {
  std::string name;
  int64_t calls = 0;
  /// summed durations; on the CPU an operator's includes the operators it calls
  double ms = 0;
};

struct WorkProfile {
  double wall_ms = 0;
  /// summed kernel and copy durations on the device (0 on the CPU)
  double device_busy_ms = 0;
  /// kernels and copies run on the device (0 on the CPU)
  int64_t device_activities = 0;
  /// the `top` names with the longest summed durations: device activities on a GPU, operators
  /// on the CPU
  std::vector<ProfileEntry> top;
};

/// Runs `work` once under the profiler, synchronising `device` before and after.
WorkProfile profile_work(
    const torch::Device& device,
    const std::function<void()>& work,
    int64_t top);

} // namespace xl::runtime
