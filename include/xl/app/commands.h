// What the apps do, from a resolved config: a training run, an evaluation, an import. The app
// layer builds the components (corpus, model, checkpoint) and hands them to the library.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "xl/config/schema.h"

namespace xl::app {

/// Trains as `config` says, in its run directory (created, or continued with `resume`); `stop_at`
/// checkpoints and stops at that step. A config whose memory estimate exceeds the available
/// memory is refused unless `enforce_memory` is false. Returns the process exit status (128 +
/// the signal when SIGINT/SIGTERM stopped it after checkpointing).
int run_training(
    const config::Config& config,
    bool resume,
    std::optional<int64_t> stop_at = std::nullopt,
    bool enforce_memory = true);

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
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Evaluates a checkpoint of a run on config.eval.split in config.eval.mode. Returns the process
/// exit status.
int run_evaluation(const config::Config& config, const EvalRequest& request);

struct ImportRequest {
  /// safetensors with Hugging Face TransfoXLLMHeadModel names
  std::string weights;
  /// the file orders adaptive-softmax clusters like kimiyoung's PyTorch code
  bool reverse_clusters = false;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Creates a run directory (config.yaml and checkpoints/best.pt) from imported weights, so that
/// xl-eval evaluates them like a trained run. The vocabulary of config.data must be the model's.
/// Returns the process exit status.
int run_import(const config::Config& config, const ImportRequest& request);

struct AverageRequest {
  std::string run_dir;
  /// the run's checkpoints to average, by name or path; empty: its snapshots
  std::vector<std::string> checkpoints;
  /// of the snapshots, only the newest this many (unset: all)
  std::optional<int64_t> last;
  /// the name of the result in the run's checkpoints/
  std::string out = "averaged";
};

/// Averages checkpoints of a run (run/average.h) into checkpoints/<out>.pt and prints what it
/// did. Returns the process exit status.
int run_average(const AverageRequest& request);

} // namespace xl::app
