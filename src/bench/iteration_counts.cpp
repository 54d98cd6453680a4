#include "xl/bench/iteration_counts.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "xl/runtime/device.h"
#include "xl/runtime/op_counter.h"
#include "xl/runtime/profile.h"
#include "xl/util/log.h"

namespace xl::bench {

// One more iteration after the timed ones, counted (the callbacks that count slow it down):
// its operator calls, autograd nodes, host reads and blocking uploads.
void add_op_counts(
    const std::string& mode,
    const BenchOptions& options,
    const torch::Device& device,
    nlohmann::json& record,
    const std::function<void()>& iteration) {
  runtime::OpCounts counts;
  std::map<std::string, int64_t> names;
  {
    const runtime::OpCounter counter(options.top_ops > 0);
    iteration();
    runtime::synchronize(device);
    counts = counter.counts();
    names = counter.by_name();
  }
  if (options.top_ops > 0) {
    std::vector<std::pair<int64_t, std::string>> ranked;
    for (const auto& [name, calls] : names) {
      ranked.emplace_back(calls, name);
    }
    std::sort(ranked.rbegin(), ranked.rend());
    ranked.resize(std::min(ranked.size(), static_cast<size_t>(options.top_ops)));
    nlohmann::json top = nlohmann::json::array();
    for (const auto& [calls, name] : ranked) {
      logger().info("{:8s} {:>7} {}", mode, calls, name);
      top.push_back({{"name", name}, {"calls", calls}});
    }
    record["top_ops"] = top;
  }
  record["ops_per_iteration"] = counts.ops;
  record["backward_nodes_per_iteration"] = counts.backward_nodes;
  record["host_reads_per_iteration"] = counts.host_reads;
  record["blocking_uploads_per_iteration"] = counts.blocking_uploads;
  logger().info(
      "{:8s} per iteration: {} operator calls, {} autograd nodes, {} host reads, {} blocking "
      "uploads",
      mode,
      counts.ops,
      counts.backward_nodes,
      counts.host_reads,
      counts.blocking_uploads);
  if (counts.replays > 0) {
    record["graphed_ops_per_iteration"] = counts.graphed;
    record["graph_replays_per_iteration"] = counts.replays;
    record["host_calls_per_iteration"] = counts.host_calls();
    logger().info(
        "{:8s} per iteration: {} graph replays{}: {} operator calls by the host",
        mode,
        counts.replays,
        counts.graphed > 0 ? fmt::format(" standing for {} emulated operator calls", counts.graphed)
                           : "",
        counts.host_calls());
  }
}

// One more iteration under the profiler: the device's busy time against the wall time, and the
// kernels (GPU) or operators (CPU) that took the longest.
void add_profile(
    const std::string& mode,
    const BenchOptions& options,
    const torch::Device& device,
    nlohmann::json& record,
    const std::function<void()>& iteration) {
  const auto profile = runtime::profile_work(
      device, [&] { iteration(); }, options.profile);
  nlohmann::json top = nlohmann::json::array();
  if (device.is_cuda()) {
    logger().info(
        "{:8s} profiled: {:.2f} ms wall, the device busy {:.2f} ms ({:.0f}%) in {} kernels and "
        "copies",
        mode,
        profile.wall_ms,
        profile.device_busy_ms,
        100.0 * profile.device_busy_ms / profile.wall_ms,
        profile.device_activities);
  } else {
    logger().info("{:8s} profiled: {:.2f} ms wall; operators, inclusive:", mode, profile.wall_ms);
  }
  for (const auto& entry : profile.top) {
    logger().info("{:8s} {:>9.3f} ms {:>6} x {:.160s}", mode, entry.ms, entry.calls, entry.name);
    top.push_back({{"name", entry.name}, {"calls", entry.calls}, {"ms", entry.ms}});
  }
  record["profile"] = {
      {"wall_ms", profile.wall_ms},
      {"device_busy_ms", profile.device_busy_ms},
      {"device_activities", profile.device_activities},
      {"top", top}};
}

} // namespace xl::bench
