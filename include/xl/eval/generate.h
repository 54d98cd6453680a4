// Text generation from a causal language model (Transformer-XL, the character transformer). The
// prompt is read in segments with the memory carried; then each new token is one position read
// over the memory, so that it costs one position, not the whole context. A model without memory
// but with a decoding cache (the character transformer: LanguageModelImpl::continues_cache)
// reads the last `window` tokens once and then each new token alone over the cached keys and
// values, until the context outgrows the window; from then on, and for a model with neither
// (a Transformer-XL trained or asked to run without memory), every new token re-reads the last
// `window` tokens. Either way the tokens are those of re-reading, seed for seed.
#pragma once

#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <functional>

#include "xl/models/language_model.h"

namespace xl::eval {

struct SamplingOptions {
  /// divides the log-probabilities; 0: always the most probable token
  double temperature = 1.0;
  /// draw from the k most probable tokens only (0: from all)
  int64_t top_k = 0;
  /// draw from the fewest most probable tokens whose probability reaches p (1: from all)
  double top_p = 1.0;
};

/// Next tokens [B] drawn from `log_probs` [B, V] (CPU) after temperature, top-k and top-p, with
/// the random numbers of `generator`.
torch::Tensor draw_tokens(
    const torch::Tensor& log_probs,
    const SamplingOptions& options,
    at::Generator& generator);

struct GenerateOptions {
  SamplingOptions sampling;
  /// tokens to generate per row
  int64_t max_tokens = 100;
  /// attention lengths (mem_len: the states the memory keeps)
  models::Span span;
  /// positions per forward pass when the prompt is read with the memory
  int64_t segment = 128;
  /// without memory, every new token re-reads the last this many tokens
  int64_t window = 128;
  /// false: re-read the window for every token even when the model has a memory or a decoding
  /// cache (the baseline their speed-up is measured against)
  bool use_memory = true;
  uint64_t seed = 0;
  torch::Device device = torch::kCPU;
  /// the forward passes under bf16 autocast (the run's train.bf16), the weights cast once
  bool bf16 = false;
  /// asked after each step's tokens reached on_tokens: true ends the generation there
  std::function<bool()> stop;
};

struct Generated {
  /// [N, B] the generated ids
  torch::Tensor tokens;
  /// [N, B] log p of each generated token under the model (before temperature and filtering)
  torch::Tensor log_probs;
  /// whether the memory carried the context (false: windows were re-read)
  bool used_memory = false;
  /// whether a decoding cache held the window's keys and values
  bool used_cache = false;
  double prompt_seconds = 0.0;
  /// generating, after the prompt
  double seconds = 0.0;
};

/// Continues `prompt` [P >= 1, B] (CPU ids) with the model in eval mode (restored afterwards);
/// `on_tokens` receives each step's ids [B] as they are drawn. The same seed gives the same
/// tokens.
Generated generate(
    models::LanguageModelImpl& model,
    const torch::Tensor& prompt,
    const GenerateOptions& options,
    const std::function<void(const torch::Tensor&)>& on_tokens = {});

} // namespace xl::eval
