// The interface every model family implements (Transformer-XL now; XLNet and
// the character transformer reuse it), so that one trainer and one evaluator
// serve them all.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "xl/nn/memory.h"

namespace xl::models {

/// What one forward pass over a segment gives.
struct LMOutput {
  /// sum of -log p(target) over the scored positions (float32 scalar); divide
  /// by count for the mean, and add sums and counts across segments for exact
  /// corpus-level numbers
  torch::Tensor nll_sum;
  int64_t count = 0;
  /// log p(target) per position [T, B] when asked for, else undefined
  torch::Tensor log_probs;
  /// the memory for the next segment (empty: none)
  nn::Memory mems;
};

/// Attention lengths that evaluation may change without touching the weights.
struct Lengths {
  int64_t mem_len = 0;
  int64_t ext_len = 0;
  /// clamp relative distances above this (<= 0: no clamping)
  int64_t clamp_len = -1;
  bool same_length = false;
};

class LanguageModelImpl : public torch::nn::Module {
 public:
  /// input [L, B] tokens, target [T, B] next tokens of the last T input
  /// positions (T <= L; the first L - T positions are extended context), mems
  /// from the previous segment.
  virtual LMOutput forward(
      const torch::Tensor& input,
      const torch::Tensor& target,
      const nn::Memory& mems,
      bool return_log_probs = false) = 0;

  virtual Lengths lengths() const = 0;
  virtual void set_lengths(const Lengths& lengths) = 0;

  /// Initialises all parameters from the current torch random state.
  virtual void init_weights() = 0;
};

using LanguageModel = std::shared_ptr<LanguageModelImpl>;

/// Number of distinct parameter values (tied parameters count once).
int64_t count_parameters(torch::nn::Module& module);

} // namespace xl::models
