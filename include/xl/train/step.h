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

/// What a step leaves. The values that depend on the step's numbers stay on the device, so that
/// the host never waits for a step: read_steps() reads those of several steps at once.
struct StepResult {
  /// every term over the whole batch: names, kinds, weights and counts (sums: `sums`)
  std::vector<models::TermTotal> terms;
  /// the batch's counted targets
  int64_t targets = 0;
  /// the terms' sums over the whole batch [terms] (double)
  torch::Tensor sums;
  /// [] bool: every term and the gradient norm were finite. False: no update was made and the
  /// memory was kept.
  torch::Tensor finite;
  /// [] float: the global gradient norm before clipping
  torch::Tensor grad_norm;
};

/// A step as the host reads it.
struct StepReport {
  bool finite = true;
  double grad_norm = 0.0;
  /// the terms with their sums
  std::vector<models::TermTotal> terms;
  int64_t targets = 0;
};

/// The device values of `steps`, in one read from the device.
std::vector<StepReport> read_steps(const std::vector<StepResult>& steps);
/// One step's (tests and the benchmark).
StepReport read_step(const StepResult& step);

/// The global norm [] of the parameters' gradients (those defined) before clipping them in place
/// to a norm of at most `clip` (0: only measured), as torch::nn::utils::clip_grad_norm_ does,
/// without reading the norm on a device: the factor is applied there. On the CPU one kernel
/// goes over every gradient (kernels/multi_tensor.h). Every gradient is dense: a tied table's
/// sparse lookup gradient is added into the softmax's dense one.
torch::Tensor clip_gradients(const std::vector<torch::Tensor>& params, double clip);

/// One optimizer update at learning rate `lr` on `batch` (on the CPU). With
/// `options.parallel`, rank r of R trains chunks [r k, (r + 1) k) of the batch split into R k,
/// so R processes with `chunks` k step as one with R k; the terms are the whole batch's on every
/// rank. `mems` holds one memory per chunk of this rank: read when `continues_streams`,
/// replaced after a finite step. `step` is the training step the model's loss schedules see.
///
/// The host does not wait for the device: the terms' sums, the gradient norm and whether they
/// were finite stay there; a step that was not finite is undone there (the optimizer skips its
/// update, the memory keeps its rows). Only the first step of a stream with memory, which has
/// no memory to keep, reads whether it was finite; data-parallel ranks also exchange their
/// chunks' counts, on the host.
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
