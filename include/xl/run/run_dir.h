// A run directory: the resolved config.yaml, train.log, metrics.jsonl and
// checkpoints/.
#pragma once

#include <filesystem>

#include "xl/config/schema.h"

namespace xl::run {

struct RunPaths {
  std::filesystem::path dir;
  std::filesystem::path config;      // config.yaml (fully resolved)
  std::filesystem::path log;         // train.log
  std::filesystem::path metrics;     // metrics.jsonl
  std::filesystem::path checkpoints; // checkpoints/
  std::filesystem::path last_checkpoint() const;
  std::filesystem::path best_checkpoint() const;
};

/// The directory of a run: run.dir, or runs/<run.name>.
std::filesystem::path run_directory(const config::Config& config);

/// Paths inside the run directory `dir`.
RunPaths run_paths(const std::filesystem::path& dir);

/// Creates (or, with `resume`, reopens) the run directory and writes the
/// resolved config into it atomically. Starting a new run where checkpoints
/// already exist is refused, so that a finished run is never overwritten by
/// accident; resuming a directory without a checkpoint is refused too.
RunPaths prepare_run_directory(const config::Config& config, bool resume);

} // namespace xl::run
