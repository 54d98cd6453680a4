// xl-average: checkpoints of a run averaged into one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xl::app {

struct AverageRequest {
  std::string run_dir;
  /// the run's checkpoints to average, by name or path; empty: its snapshots
  std::vector<std::string> checkpoints;
  /// of the snapshots, only the newest this many (unset: all)
  std::optional<int64_t> last;
  /// the name of the result in the run's checkpoints/ (not one the trainer writes)
  std::string out = "averaged";
  /// replace an earlier result of that name
  bool force = false;
};

/// Averages checkpoints of a run (lab/average.h) into checkpoints/<out>.pt and prints what it
/// did. Returns the process exit status.
int run_average(const AverageRequest& request);

} // namespace xl::app
