// What xl-bench adds to a mode's record once it has timed it: one more iteration counted, and
// one under the profiler.
#pragma once

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include <functional>
#include <string>

#include "xl/bench/benchmark.h"

namespace xl::bench {

/// `iteration` once more, counted (the callbacks that count slow it down): its operator calls,
/// autograd nodes, host reads and blocking uploads, graph replays, and with options.top_ops the
/// most called operators, into `record` and the log.
void add_op_counts(
    const std::string& mode,
    const BenchOptions& options,
    const torch::Device& device,
    nlohmann::json& record,
    const std::function<void()>& iteration);

/// `iteration` once more under the profiler (options.profile): the device's busy time against
/// the wall time, and the kernels (GPU) or operators (CPU) that took the longest.
void add_profile(
    const std::string& mode,
    const BenchOptions& options,
    const torch::Device& device,
    nlohmann::json& record,
    const std::function<void()>& iteration);

} // namespace xl::bench
