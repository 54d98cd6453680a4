// xl-eval: a checkpoint of a run scored on a split or a file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xl/config/schema.h"

namespace xl::app {

struct EvalRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run ("step_300", "averaged") or a file
  std::string checkpoint = "best";
  /// stop after this many batches (segments in memory mode, windows batches in vanilla mode)
  std::optional<int64_t> max_steps;
  /// evaluate this file instead of eval.split (raw text for XLNet pretraining runs, labelled
  /// text for classification runs), encoded with the run's vocabulary
  std::optional<std::string> file;
  /// write every scored batch to this safetensors file (batch_<s>/<field>; metadata: batches,
  /// continues_streams)
  std::optional<std::string> dump_batches;
  /// replace an existing --dump-batches file
  bool force = false;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Evaluates a checkpoint of a run on config.eval.split in config.eval.mode. Returns the process
/// exit status.
int run_evaluation(const config::Config& config, const EvalRequest& request);

} // namespace xl::app
