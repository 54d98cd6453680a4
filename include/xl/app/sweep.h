// xl-sweep: the runs of a sweep trained, evaluated and compared.
#pragma once

#include "xl/lab/sweep.h"

namespace xl::app {

struct SweepRequest {
  lab::SweepSpec spec;
  /// print each run's xl-train command instead of running it (for a scheduler)
  bool dry_run = false;
  /// evaluate each finished run with xl-eval unless it has been
  bool evaluate = true;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
  /// replace a compare.csv or curves.png in the folder that no sweep wrote
  bool force = false;
};

/// The file that marks a folder's compare.csv and curves.png as a sweep's own.
inline constexpr const char* kSweepMark = ".xl-sweep";

/// Trains every run of a sweep one after another with xl-train (a finished run is skipped, an
/// interrupted one resumed), evaluates each with xl-eval, then prints xl-compare's table and
/// writes <dir>/compare.csv and <dir>/curves.png (a pair that no sweep wrote, there before, is
/// refused unless `force`). SIGINT and SIGTERM are passed on to the
/// running child (which checkpoints and exits) and stop the sweep; a child gets SIGTERM when the
/// sweep dies. Returns the process exit status: 128 + the signal that stopped a run or the
/// sweep; a run that failed is a UserError naming the failed runs, after the others ran.
int run_sweep(const SweepRequest& request);

} // namespace xl::app
