// Entry points of the apps: a training run and an evaluation, from a resolved
// config.
#pragma once

#include <string>

#include "xl/config/schema.h"

namespace xl::train {

/// Trains as `config` says, in its run directory (created, or continued with
/// `resume`). Returns the process exit status.
int run_training(const config::Config& config, bool resume);

/// Evaluates the `which` ("best" or "last") checkpoint of the run in `run_dir`
/// on config.eval.split. Returns the process exit status.
int run_evaluation(
    const config::Config& config,
    const std::string& run_dir,
    const std::string& which);

} // namespace xl::train
