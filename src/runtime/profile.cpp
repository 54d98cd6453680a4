#include "xl/runtime/profile.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <set>

#include "xl/runtime/device.h"

namespace xl::runtime {

WorkProfile profile_work(
    const torch::Device& device,
    const std::function<void()>& work,
    int64_t top) {
  namespace profiler = torch::autograd::profiler;
  using torch::profiler::impl::ActivityType;
  const bool gpu = device.is_cuda();
  std::set<ActivityType> activities{ActivityType::CPU};
  if (gpu) {
    activities.insert(ActivityType::CUDA);
  } else {
    // Kineto looks for GPUs whatever it is asked to trace, and logs their absence as an error
    // on a machine without one: on the CPU it has nothing to say that the table does not.
    ::setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
  }
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  profiler::prepareProfiler(config, activities);
  synchronize(device);
  profiler::enableProfiler(config, activities);
  const auto start = std::chrono::steady_clock::now();
  work();
  synchronize(device);
  WorkProfile profile;
  profile.wall_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const auto result = profiler::disableProfiler();
  std::map<std::string, ProfileEntry> by_name;
  for (const auto& event : result->events()) {
    // On a GPU only what ran on the device: its host-side operators are what the op counter
    // already counts.
    if (gpu != (event.deviceType() == c10::DeviceType::CUDA)) {
      continue;
    }
    const double ms = static_cast<double>(event.durationNs()) / 1e6;
    auto& entry = by_name[event.name()];
    entry.name = event.name();
    entry.calls += 1;
    entry.ms += ms;
    if (gpu) {
      profile.device_busy_ms += ms;
      profile.device_activities += 1;
    }
  }
  for (auto& [name, entry] : by_name) {
    profile.top.push_back(std::move(entry));
  }
  std::sort(profile.top.begin(), profile.top.end(), [](const auto& a, const auto& b) {
    return a.ms > b.ms;
  });
  profile.top.resize(std::min(profile.top.size(), static_cast<size_t>(std::max<int64_t>(top, 0))));
  return profile;
}

} // namespace xl::runtime
