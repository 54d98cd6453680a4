// XLNet (Yang et al. 2019): word embeddings, a stack of two-stream layers with bidirectional
// relative attention over [memory | segment], and two heads. Follows zihangdai/xlnet and Hugging
// Face's XLNetLMHeadModel (docs/xlnet.md gives the decision on each divergence).
//
// Batch fields and what the model does with them:
//   pretraining (permutation LM): tokens [L, B], perm_mask [L, L, B], target_mapping [P, L, B],
//     targets [P, B], target_mask [P, B] optional, segment_ids [L, B] optional, reversed [B]
//     optional (bi_data). The query stream predicts the targets: loss term "lm".
//   classification: tokens [L, B], labels [B], segment_ids and padding optional. The content
//     stream's output at the last position (<cls>, inputs are left-padded), or its mean over
//     the positions that are not padding, goes through the summary projection and the
//     classifier: terms "cls" of kind kNll (cross-entropy) and
//     "cls" of kind kAccuracy (weight 0), logged as loss/cls and acc/cls; ModelOutput::logits
//     [B, C].
// Memory caches each layer's content-stream input over the first reuse_len positions (all of
// them when reuse_len is 0), the last mem_len kept, detached.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "xl/models/language_model.h"
#include "xl/models/layer_stack.h"
#include "xl/nn/decoder_layer_options.h"
#include "xl/nn/dropout.h"
#include "xl/nn/init.h"
#include "xl/nn/positional.h"
#include "xl/nn/two_stream_attention.h"

namespace xl::models {

/// Attention lengths of XLNet; evaluation may override mem_len and clamp_len through Span.
struct XLNetLengths {
  int64_t mem_len = 0;
  /// positions of each segment that go into the memory (0: all)
  int64_t reuse_len = 0;
  /// clamp relative distances to [-clamp_len, clamp_len] (<= 0: no clamping)
  int64_t clamp_len = -1;

  XLNetLengths with(const Span& span) const;
};

/// What the classification head reads of the content stream's last layer.
enum class SequenceSummary {
  /// the last position: <cls>, since inputs are left-padded (zihangdai's run_classifier)
  kLast,
  /// the mean over the positions that are not padding
  kMean,
};

struct XLNetOptions {
  XLNetOptions(int64_t n_token, const StackShape& stack) : n_token_(n_token), stack_(stack) {}
  TORCH_ARG(int64_t, n_token);
  TORCH_ARG(StackShape, stack);
  /// per-layer r_w/r_r/r_s biases instead of one shared set
  TORCH_ARG(bool, untie_r) = false;
  /// classes of the classification head (0: no head)
  TORCH_ARG(int64_t, n_class) = 0;
  TORCH_ARG(SequenceSummary, summary) = SequenceSummary::kLast;
  TORCH_ARG(XLNetLengths, lengths) = {};
};

class XLNetImpl : public LanguageModelImpl {
 public:
  explicit XLNetImpl(const XLNetOptions& options);
  /// Registers every sub-module and parameter, then draws them.
  void reset();
  void reset_parameters() override;

  /// See the table above; mems: n_layer tensors [M, B, D] or empty.
  ModelOutput forward(
      const sources::Batch& batch,
      const nn::Memory& mems,
      const ForwardArgs& args = {}) override;

  XLNetOptions options;
  torch::nn::Embedding word_embedding{nullptr};
  /// [1, 1, D]: the query stream's input
  torch::Tensor mask_emb;
  /// [H, Dh] shared, or [n_layer, H, Dh] with untie_r
  torch::Tensor r_w_bias;
  torch::Tensor r_r_bias;
  torch::Tensor r_s_bias;
  nn::SinusoidEmbedding pos_emb{nullptr};
  nn::Dropout drop{nullptr};
  /// nn::TwoStreamLayer each; graphed for the permutation LM (both streams) once its memory is
  /// full or when it keeps none, never for a classifier, whose batches are cut to their longest
  /// review
  LayerStack layers{nullptr};
  /// [n_token]: the LM head's bias; its weight is the word embedding
  torch::Tensor lm_bias;
  /// the classification head (n_class > 0): summary projection (tanh) and classifier
  torch::nn::Linear summary{nullptr};
  torch::nn::Linear logits_proj{nullptr};

 private:
  /// Position embeddings [G, L + K, D] and the per-row direction (bi_data), undefined when
  /// every row reads forwards.
  std::pair<torch::Tensor, torch::Tensor> positions(
      const sources::Batch& batch,
      int64_t klen,
      const XLNetLengths& lengths);
  /// Layer args.index on the content stream streams[0] [L, B, D] and the query stream
  /// streams[1] [P, B, D] (absent in classification), args.tensors holding the batch's
  /// TwoStreamTerms (terms_of); their outputs.
  std::vector<torch::Tensor> layer_forward(
      const std::vector<torch::Tensor>& streams,
      const LayerArgs& args);
  /// Loss terms of the permutation LM: the query stream's output `g` [P, B, D].
  void lm_terms(
      const sources::Batch& batch,
      const torch::Tensor& g,
      const ForwardArgs& args,
      ModelOutput& out);
  /// Loss terms and logits of the classification head on the content stream `h` [L, B, D].
  void classification_terms(const sources::Batch& batch, const torch::Tensor& h, ModelOutput& out);
};

} // namespace xl::models
