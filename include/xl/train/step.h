// One training step, shared by the trainer and the benchmark so that xl-bench measures what
// training runs.
//
// The batch is split into `chunks` along its rows (gradient accumulation), each chunk with its own
// memory. The objective is the weighted sum of the model's loss terms, each normalised over the
// whole batch: sum_t weight_t * (sum over chunks of s_t,c) / N_t. Chunk c backpropagates
//   sum_t weight_t * s_t,c / n_t,c * (n_c / N)
// where n_c / N is the chunk's share of the batch's counted targets: exact whenever each weighted
// term counts in proportion to the targets (every family here does; the step checks it and
// refuses the update otherwise). Then, if every term is finite: clipping and the optimizer step.
#pragma once

#include <torch/torch.h>

#include <vector>

#include "xl/config/schema.h"
#include "xl/models/language_model.h"
#include "xl/sources/batch.h"
#include "xl/train/data_parallel.h"
#include "xl/train/optimizer.h"

namespace xl::train {

struct StepOptions {
  /// accumulation chunks; must divide the batch's rows
  int64_t chunks = 1;
  /// global gradient-norm clipping (0: off)
  double clip = 0.0;
  bool bf16 = false;
  torch::Device device = torch::kCPU;
  /// data-parallel training: this rank trains its share of the batch's chunks (see train_step)
  DataParallel* parallel = nullptr;

  /// train.batch_chunk, clip and bf16 on `device`, one process
  static StepOptions from(const config::TrainConfig& t, const torch::Device& device);
};

struct StepResult {
  /// false: a term or the gradient norm was NaN or infinite; no update was made and the
  /// memory was kept
  bool finite = true;
  /// the global gradient norm before clipping (unset when a term was not finite)
  double grad_norm = 0.0;
  /// every term over the whole batch
  std::vector<models::TermTotal> terms;
  /// the batch's counted targets
  int64_t targets = 0;
};

/// One optimizer update at learning rate `lr` on `batch` (on the CPU). With
/// `options.parallel`, rank r of R trains chunks [r k, (r + 1) k) of the batch split into R k,
/// so R processes with `chunks` k step as one with R k; the terms are the whole batch's on every
/// rank. `mems` holds one memory per chunk of this rank: read when `continues_streams`,
/// replaced after a finite step. `step` is the training step the model's loss schedules see.
StepResult train_step(
    models::LanguageModelImpl& model,
    Optimizer& optimizer,
    const sources::Batch& batch,
    bool continues_streams,
    std::vector<nn::Memory>& mems,
    double lr,
    int64_t step,
    const StepOptions& options);

} // namespace xl::train
