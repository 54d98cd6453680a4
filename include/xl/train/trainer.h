// The shared trainer: ordered segments with memory, gradient accumulation over
// batch chunks (each with its own memory), global-norm clipping, scheduled
// learning rates, periodic validation, and checkpoints from which --resume
// continues exactly where the run stopped.
#pragma once

#include <torch/torch.h>

#include <atomic>
#include <optional>

#include "xl/config/schema.h"
#include "xl/data/corpus.h"
#include "xl/models/language_model.h"
#include "xl/run/run_dir.h"

namespace xl::train {

/// Signals that ask a run to checkpoint and stop (SIGINT, SIGTERM); 0 when none
/// arrived.
std::atomic<int>& stop_signal();
/// Installs handlers that set stop_signal().
void install_stop_handlers();

struct TrainResult {
  int64_t step = 0;
  double best_valid_loss = 0.0;
  /// the signal that stopped the run early, or 0
  int signal = 0;
};

class Trainer {
 public:
  Trainer(
      config::Config config,
      run::RunPaths paths,
      data::Corpus& corpus,
      models::LanguageModel model,
      torch::Device device);

  /// Trains to train.max_step (or `stop_at`, a step at which to checkpoint and
  /// stop early), continuing from the last checkpoint when `resume`. A run of
  /// non-finite losses longer than train.max_bad_steps is a UserError; the last
  /// good checkpoint stays.
  TrainResult run(bool resume, std::optional<int64_t> stop_at = std::nullopt);

 private:
  struct State;
  void save(const State& state, bool best);
  void load(State& state);
  double validate(int64_t step);

  config::Config config_;
  run::RunPaths paths_;
  data::Corpus& corpus_;
  models::LanguageModel model_;
  torch::Device device_;
};

} // namespace xl::train
