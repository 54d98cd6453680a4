// Transformer-XL (Dai et al. 2019): adaptive input, a stack of decoder layers with relative
// attention over [memory | segment], and the projected adaptive log-softmax. Follows the
// kimiyoung/Hugging Face PyTorch semantics (docs/transformer-xl.md gives the decision on each
// known divergence between the reference implementations).
//
// Batch fields: tokens [L, B], targets [T, B] (T <= L), target_mask optional. Output: one loss
// term "lm" (summed -log p over the counted targets), log-probs on request, the next memory.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xl/models/language_model.h"
#include "xl/models/layer_stack.h"
#include "xl/nn/adaptive.h"
#include "xl/nn/decoder_layer_options.h"
#include "xl/nn/dropout.h"
#include "xl/nn/init.h"
#include "xl/nn/learned_positions.h"
#include "xl/nn/positional.h"

namespace xl::models {

/// Attention lengths of Transformer-XL; evaluation overrides them per call through Span.
struct TransformerXLLengths {
  int64_t mem_len = 0;
  int64_t ext_len = 0;
  /// clamp relative distances above this (<= 0: no clamping)
  int64_t clamp_len = -1;
  bool same_length = false;

  /// These lengths with the fields `span` sets replaced.
  TransformerXLLengths with(const Span& span) const;
};

struct TransformerXLOptions {
  TransformerXLOptions(const StackShape& stack, nn::AdaptiveSoftmaxOptions output)
      : stack_(stack), output_(std::move(output)) {}
  TORCH_ARG(StackShape, stack);
  /// the adaptive softmax (its `adaptive` part, d_proj = d_model, also builds the adaptive
  /// input) and what it ties to the input
  TORCH_ARG(nn::AdaptiveSoftmaxOptions, output);
  /// per-layer u/v biases instead of one shared pair
  TORCH_ARG(bool, untie_r) = false;
  /// relative attention; false: vanilla attention with absolute positions
  TORCH_ARG(bool, relative) = true;
  /// vanilla attention only: learned positions added to every layer's input (Al-Rfou et al.;
  /// kimiyoung's attn_type 3) instead of sinusoids added to the embeddings
  TORCH_ARG(bool, learned_positions) = false;
  /// rows of the learned position tables: the longest [memory | segment] span
  TORCH_ARG(int64_t, n_ctx) = 0;
  TORCH_ARG(TransformerXLLengths, lengths) = {};
};

class TransformerXLImpl : public LanguageModelImpl {
 public:
  explicit TransformerXLImpl(const TransformerXLOptions& options);
  /// Registers every sub-module and parameter, then draws them.
  void reset();
  void reset_parameters() override;

  /// batch.tokens [L, B], batch.targets [T, B]; mems: n_layer tensors [M, B, D] or empty
  ModelOutput forward(
      const sources::Batch& batch,
      const nn::Memory& mems,
      const ForwardArgs& args = {}) override;

  TransformerXLOptions options;
  nn::AdaptiveEmbedding word_emb{nullptr};
  nn::SinusoidEmbedding pos_emb{nullptr};
  /// learned_positions only: a table per layer
  nn::LearnedPositions positions{nullptr};
  nn::Dropout drop{nullptr};
  /// u and v: [H, Dh] shared, or [n_layer, H, Dh] with untie_r (nn::layer_bias gives layer i's);
  /// undefined for vanilla attention
  torch::Tensor r_w_bias;
  torch::Tensor r_r_bias;
  /// RelDecoderLayer each, or VanillaDecoderLayer for vanilla attention; graphed once its
  /// memory is full (or when it keeps none)
  LayerStack layers{nullptr};
  nn::AdaptiveLogSoftmax crit{nullptr};

 private:
  /// batch.tokens [L, B] -> the first layer's input [L, B, D], and the relative position
  /// embeddings [M + L, D] (undefined for vanilla attention)
  std::pair<torch::Tensor, torch::Tensor> embed(
      const sources::Batch& batch,
      int64_t mlen,
      const TransformerXLLengths& lengths);
  /// Layer args.index over its input `h` [L, B, D], with the call's "mask" and "r" (undefined
  /// for vanilla attention) and its memory [M, B, D] (or undefined).
  torch::Tensor layer_forward(const torch::Tensor& h, const LayerArgs& args);
  /// log p(target) [T, B] of batch.targets at the last T positions of `core` [L, B, D]
  torch::Tensor score(const torch::Tensor& core, const sources::Batch& batch);
};

} // namespace xl::models
