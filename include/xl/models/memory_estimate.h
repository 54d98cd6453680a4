// The memory a config needs, estimated before anything is allocated, so that a size that
// cannot fit (d_model 10^7, 10^5 layers, a million-token evaluation segment) is refused with a
// message instead of paging until the kernel kills the process. The formula is in
// docs/integrity.md ("Memory estimate"); it counts float32 tensors and is an upper bound for
// bf16 runs.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <string>

#include "xl/config/schema.h"
#include "xl/models/memory_shape.h"

namespace xl::models {

/// Bytes, as doubles: a size that overflows int64 must still be comparable.
struct MemoryEstimate {
  /// parameter values, tied ones once
  double parameters = 0;
  /// the weights themselves
  double weights = 0;
  /// training: gradients and optimizer state (Adam, AdamW and LAMB two moments; SGD a momentum
  /// buffer when train.mom > 0), and two copies of the largest parameter tensor (a tied table's
  /// gradient being summed, the optimizer's per-tensor temporaries)
  double optimizer = 0;
  /// training: what autograd keeps for the backward pass, plus one layer's gradients of its
  /// scores and the gradient of the logits; evaluation: the largest transient
  double activations = 0;
  /// the recurrence memory carried between batches (old and new while a batch runs)
  double memories = 0;
  /// LibTorch itself: code, kernels and allocator slack (measured: 0.36 GiB of resident memory
  /// for a tiny model on the CPU)
  double runtime = 0;

  double total() const {
    return weights + optimizer + activations + memories + runtime;
  }
  /// "12.3 GiB (... parameters: weights ..., gradients and optimizer ..., activations ...,
  /// memories ..., runtime ...)"
  std::string describe() const;
};

/// A training step of `config` over a vocabulary of `n_token`: one chunk of
/// train.batch_size / train.batch_chunk sequences, with the whole graph kept (or one layer's,
/// with train.activation_checkpointing).
MemoryEstimate estimate_training_memory(const config::Config& config, int64_t n_token);

/// An evaluation batch of `config` (eval.batch_size, its segment length and memory, as
/// eval_span(config, false) resolves them) without a graph.
MemoryEstimate estimate_evaluation_memory(const config::Config& config, int64_t n_token);

/// Compares `need` for `what` ("training", "evaluation") with the `available` bytes of `where`
/// ("the CPU", "cuda:0"). Too much is a UserError naming both and the flag that overrides the
/// check; with `enforce` false it is a warning.
void check_memory(
    const MemoryEstimate& need,
    const std::string& what,
    double available,
    const std::string& where,
    bool enforce);

/// check_memory against what `device` has available.
void check_memory(
    const MemoryEstimate& need,
    const std::string& what,
    const torch::Device& device,
    bool enforce);

} // namespace xl::models
