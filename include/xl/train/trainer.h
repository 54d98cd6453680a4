// The shared trainer, one for every model family: batches from a batch source (the memory of
// each batch chunk carried over when the source continues streams), the shared training step,
// scheduled learning rates, per-term logging, periodic validation, and checkpoints from which
// --resume continues exactly where the run stopped. Under data-parallel training every rank
// runs it on its share of each batch (train_step), validates on its own and reads the same
// checkpoints; rank 0 alone writes, with every rank's memories and random state.
#pragma once

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include <optional>

#include "xl/config/schema.h"
#include "xl/models/language_model.h"
#include "xl/run/run_dir.h"
#include "xl/sources/dataset.h"
#include "xl/train/data_parallel.h"
#include "xl/train/training_state.h"

namespace xl::train {

struct TrainResult {
  /// the step this process began after (0, or the resumed checkpoint's) and the last it ran
  int64_t first_step = 0;
  int64_t step = 0;
  double seconds = 0.0;
  double best_valid_loss = 0.0;
  /// this process's last validation and last logged training window (empty: none)
  std::vector<models::TermTotal> last_valid;
  std::vector<models::TermTotal> last_train;
  int64_t last_valid_step = 0;
  /// the signal that stopped the run early, or 0
  int signal = 0;
  /// the run ended at train.early_stop validations in a row without a new best (this process,
  /// or before a resume)
  bool stopped_early = false;
};

class TrainingRun;

class Trainer {
 public:
  Trainer(
      config::Config config,
      run::RunPaths paths,
      sources::Dataset& data,
      models::LanguageModel model,
      torch::Device device,
      DataParallel* parallel = nullptr);

  /// Trains to train.max_step (or `stop_at`, a step at which to checkpoint and stop early, or
  /// train.early_stop validations in a row without a new best), continuing from the last
  /// checkpoint when `resume`. A run of non-finite losses longer than train.max_bad_steps is a
  /// UserError; the last good checkpoint stays.
  TrainResult run(
      bool resume,
      std::optional<int64_t> stop_at = std::nullopt,
      bool finished_ok = false);

 private:
  friend class TrainingRun; // one run of the loop, with its state (src/train/training_run.h)
  /// Whether a stop signal arrived, on any rank.
  bool stop_requested() const;
  /// What the signals asked, on any rank: to stop, or for a checkpoint (SIGUSR1).
  struct Requests {
    bool stop = false;
    bool checkpoint = false;
  };
  Requests requests() const;
  /// train.keep_snapshots: last.pt, just written at `step`, copied to checkpoints/step_<step>.pt,
  /// and the oldest snapshots beyond the number to keep removed
  void keep_snapshot(int64_t step) const;
  /// The hint after a divergence: the last checkpoint, when one exists.
  std::string last_good_checkpoint() const;

  config::Config config_;
  run::RunPaths paths_;
  sources::Dataset& data_;
  models::LanguageModel model_;
  torch::Device device_;
  /// data-parallel training: every rank runs the trainer, rank 0 alone writes
  DataParallel* parallel_;
  /// whether this process writes metrics and checkpoints
  bool writes_;
};

} // namespace xl::train
