// The state of a training loop (Trainer::State): what Trainer's member functions share across
// trainer.cpp (the loop) and trainer_checkpoints.cpp (saving, loading and snapshots).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "xl/run/metrics.h"
#include "xl/run/progress.h"
#include "xl/train/optimizer.h"
#include "xl/train/schedule.h"
#include "xl/train/step.h"
#include "xl/train/trainer.h"
#include "xl/train/training_state.h"

namespace xl::train {

struct Trainer::State {
  int64_t step = 0;
  int64_t last_step = 0;
  bool finished_ok = false; // --auto-resume: a finished run is left as it is
  bool finished = false;
  /// train.early_stop validations in a row without a new best
  bool stopped_early = false;
  std::unique_ptr<sources::BatchSource> source;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<LRSchedule> schedule;
  std::vector<nn::Memory> mems; // one per batch chunk
  /// what a checkpoint keeps of the loop: the best validation, the non-finite steps, the
  /// logging window
  LoopState loop;
  /// the last logged window and validation, for the summary
  std::vector<models::TermTotal> last_train;
  std::vector<models::TermTotal> last_valid;
  int64_t last_valid_step = 0;
  /// whether this process printed a training line yet
  bool shown_progress = false;
  /// records up to this step were logged before a resume: the new ones say they repeat them
  int64_t logged_until = 0;
  std::unique_ptr<run::MetricsWriter> metrics;
  std::unique_ptr<run::Progress> progress;
  /// the step of the last checkpoint written
  int64_t saved_step = 0;
  /// resumed with these settings changed ("train.lr: 0.001 -> 0.002")
  std::vector<std::string> changes;
  /// the steps since the last read of their device values (flush), in order
  std::vector<std::pair<int64_t, StepResult>> pending;
  /// the gradient norm of the last finite step read
  double grad_norm = 0.0;
};

} // namespace xl::train
