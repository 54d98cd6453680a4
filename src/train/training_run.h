// One run of the training loop (Trainer::run): its state (the step, the batch source, optimizer
// and schedule, the logging window, the metrics writer) and the work that shares it, across
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

class TrainingRun {
 public:
  /// A run of `trainer` to `last_step`; `finished_ok` (--auto-resume): a finished run is left
  /// as it is.
  TrainingRun(Trainer& trainer, int64_t last_step, bool finished_ok);
  /// Trains from the start, or from the last checkpoint when `resume`.
  TrainResult train(bool resume);

 private:
  /// 1. the batch source, optimizer and schedule; the checkpoint's state when resuming
  void start(bool resume);
  bool nothing_to_train();
  /// 2. the device values of the steps run since the last call, in one read: each finite
  /// step's terms join the logging window, each other one goes to skip_non_finite. Returns
  /// whether the last step was finite (false: none pending).
  bool flush();
  /// a step whose loss was not finite: counted, logged, fatal after too many in a row
  void skip_non_finite(int64_t step);
  /// 3. the training line and record every train.log_interval steps (`grad_norm`: the last
  /// finite step's, before clipping)
  void log_window(int64_t step, double lr);
  /// between them, a progress line after the first step and at least every
  /// run.progress_seconds
  void show_progress();
  /// 4. validation (unless a signal stops the run) and the checkpoint
  void validate_and_checkpoint(int64_t step, bool signalled);
  /// Whether train.early_stop validations in a row brought no new best.
  bool stale() const;
  /// SIGUSR1 (on any rank, Trainer::Requests::checkpoint): a checkpoint of `step`, and
  /// training goes on
  void checkpoint_on_request(int64_t step);
  /// 5. whether the run stops after `step`: a stop signal (`result` gets it; the step was
  /// checkpointed), or train.early_stop at this step's validation
  bool stops_after(int64_t step, bool signalled, TrainResult& result);
  /// The validation terms at `step`; empty when a signal interrupted it.
  std::vector<models::TermTotal> validate(int64_t step);
  /// Appends `record` to metrics.jsonl (rank 0), marked as a repeat of a step logged before
  /// the resume.
  void write_record(nlohmann::json record);
  /// What a run that went through its loop reports.
  void summarize(TrainResult& result) const;
  void save(bool best);
  void load();
  /// what a checkpoint holds of the run and the model (train/training_state.h)
  TrainingParts parts();

  Trainer& trainer_;
  int64_t step_ = 0;
  int64_t last_step_ = 0;
  bool finished_ok_ = false;
  bool finished_ = false;
  /// train.early_stop validations in a row without a new best
  bool stopped_early_ = false;
  std::unique_ptr<sources::BatchSource> source_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<LRSchedule> schedule_;
  std::vector<nn::Memory> mems_; // one per batch chunk
  /// what a checkpoint keeps of the loop: the best validation, the non-finite steps, the
  /// logging window
  LoopState loop_;
  /// the last logged window and validation, for the summary
  std::vector<models::TermTotal> last_train_;
  std::vector<models::TermTotal> last_valid_;
  int64_t last_valid_step_ = 0;
  /// whether this process printed a training line yet
  bool shown_progress_ = false;
  /// records up to this step were logged before a resume: the new ones say they repeat them
  int64_t logged_until_ = 0;
  std::unique_ptr<run::MetricsWriter> metrics_;
  std::unique_ptr<run::Progress> progress_;
  /// the step of the last checkpoint written
  int64_t saved_step_ = 0;
  /// resumed with these settings changed ("train.lr: 0.001 -> 0.002")
  std::vector<std::string> changes_;
  /// the steps since the last read of their device values (flush), in order
  std::vector<std::pair<int64_t, StepResult>> pending_;
  /// the gradient norm of the last finite step read
  double grad_norm_ = 0.0;
};

} // namespace xl::train
