// What a training checkpoint holds: the model, the optimizer, the schedule, the batch source's
// position, the loop's own values (LoopState) and every rank's memories and random streams
// (RankStates); and what a resume must check first. Each key is named once
// (training_state.cpp): the same lists write and read them, so that save and load cannot drift
// apart.
#pragma once

#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

#include "xl/config/schema.h"
#include "xl/models/loss.h"
#include "xl/nn/memory.h"
#include "xl/run/checkpoint.h"
#include "xl/sources/dataset.h"
#include "xl/train/data_parallel.h"
#include "xl/train/optimizer.h"
#include "xl/train/schedule.h"

namespace xl::train {

/// The loop's values a resume continues from.
struct LoopState {
  double best_valid = std::numeric_limits<double>::infinity();
  /// non-finite steps in a row, and in all
  int64_t bad_streak = 0;
  int64_t skipped = 0;
  /// the loss terms of the current logging window
  std::vector<models::TermTotal> window;
  /// validations in a row without a new best (train.early_stop)
  int64_t stale_validations = 0;
};

/// What every rank holds that a checkpoint keeps: the memories of each batch chunk and the
/// random states, in rank order, so that the checkpoint of R ranks with batch_chunk k holds
/// what one process with batch_chunk R k would.
struct RankStates {
  std::vector<nn::Memory> mems;
  std::vector<torch::Tensor> cpu_rng;
  std::vector<torch::Tensor> cuda_rng; // empty on the CPU
};

/// This process's memories and random states, gathered from every rank under data-parallel
/// training (every rank takes part).
RankStates gather_rank_states(
    const std::vector<nn::Memory>& mems,
    const torch::Device& device,
    DataParallel* parallel);

/// The parts of a run that its checkpoint holds (besides the memories and random streams).
struct TrainingParts {
  torch::nn::Module& model;
  Optimizer& optimizer;
  LRSchedule& schedule;
  sources::BatchSource& source;
  LoopState& loop;
};

/// Writes `parts` and `ranks` into a checkpoint's archive.
void write_training_state(
    torch::serialize::OutputArchive& archive,
    const TrainingParts& parts,
    const RankStates& ranks);

/// Reads what write_training_state wrote into `parts` (the model moved to `device`), sets rank
/// `rank`'s random generators (the CPU's, and `device`'s when it is CUDA) and returns its
/// memories, on `device`. A checkpoint of another number of ranks than `ranks`, or one another
/// program wrote, is a UserError naming `file`.
std::vector<nn::Memory> read_training_state(
    torch::serialize::InputArchive& archive,
    const TrainingParts& parts,
    int rank,
    int ranks,
    const torch::Device& device,
    const std::string& file);

/// Whether `archive` holds what write_training_state wrote (a resume can start from it), not
/// weights alone (an import, an average).
bool holds_training_state(torch::serialize::InputArchive& archive);

/// What a resume from `file` (written with `info`) by `config` over `data` may change: the
/// settings it changes ("train.lr: 0.001 -> 0.002"). Another model or data, another
/// vocabulary, and changes the saved state depends on (the batches, the optimizer, the random
/// stream) are UserErrors.
std::vector<std::string> check_resume(
    const std::string& file,
    const run::CheckpointInfo& info,
    const config::Config& config,
    const sources::Dataset& data);

} // namespace xl::train
