// Transformer-XL (Dai et al. 2019): adaptive input, a stack of decoder layers
// with relative attention over [memory | segment], and the projected adaptive
// log-softmax. Follows the kimiyoung/Hugging Face PyTorch semantics (see
// docs/transformer-xl.md for the decisions on each known divergence between the
// reference implementations).
#pragma once

#include <torch/torch.h>

#include <vector>

#include "xl/models/language_model.h"
#include "xl/nn/adaptive.h"
#include "xl/nn/decoder_layer.h"
#include "xl/nn/positional.h"

namespace xl::models {

struct TransformerXLOptions {
  TransformerXLOptions(
      int64_t n_token,
      int64_t n_layer,
      int64_t n_head,
      int64_t d_model,
      int64_t d_head,
      int64_t d_inner)
      : n_token_(n_token),
        n_layer_(n_layer),
        n_head_(n_head),
        d_model_(d_model),
        d_head_(d_head),
        d_inner_(d_inner),
        d_embed_(d_model) {}
  TORCH_ARG(int64_t, n_token);
  TORCH_ARG(int64_t, n_layer);
  TORCH_ARG(int64_t, n_head);
  TORCH_ARG(int64_t, d_model);
  TORCH_ARG(int64_t, d_head);
  TORCH_ARG(int64_t, d_inner);
  TORCH_ARG(int64_t, d_embed);
  TORCH_ARG(double, dropout) = 0.0;
  TORCH_ARG(double, dropatt) = 0.0;
  TORCH_ARG(bool, pre_lnorm) = false;
  /// per-layer u/v biases instead of one shared pair
  TORCH_ARG(bool, untie_r) = false;
  /// relative attention; false: vanilla attention with absolute sinusoid
  /// positions
  TORCH_ARG(bool, relative) = true;
  TORCH_ARG(Lengths, lengths) = {};
  TORCH_ARG(std::vector<int64_t>, cutoffs) = {};
  TORCH_ARG(int64_t, div_val) = 1;
  TORCH_ARG(bool, tie_weight) = true;
  TORCH_ARG(std::vector<bool>, tie_projs) = {};
  /// uniform init in [-init_range, init_range] instead of normal(0, init_std)
  TORCH_ARG(bool, uniform_init) = false;
  TORCH_ARG(double, init_range) = 0.1;
  TORCH_ARG(double, init_std) = 0.02;
  TORCH_ARG(double, proj_init_std) = 0.01;
  TORCH_ARG(double, layer_norm_eps) = 1e-5;
};

class TransformerXLImpl : public LanguageModelImpl {
 public:
  explicit TransformerXLImpl(TransformerXLOptions options);

  /// input [L, B], target [T, B], mems: n_layer tensors [M, B, D] or empty
  LMOutput forward(
      const torch::Tensor& input,
      const torch::Tensor& target,
      const nn::Memory& mems,
      bool return_log_probs = false) override;

  Lengths lengths() const override {
    return options.lengths();
  }
  void set_lengths(const Lengths& lengths) override {
    options.lengths(lengths);
  }
  void init_weights() override;

  /// u and v of layer i ([H, Dh] each)
  torch::Tensor u(int64_t layer) const;
  torch::Tensor v(int64_t layer) const;

  TransformerXLOptions options;
  nn::AdaptiveEmbedding word_emb{nullptr};
  nn::SinusoidEmbedding pos_emb{nullptr};
  torch::nn::ModuleList layers{nullptr};
  nn::AdaptiveLogSoftmax crit{nullptr};
  torch::nn::Dropout drop{nullptr};
  /// [H, Dh] shared, or [n_layer, H, Dh] with untie_r; undefined for vanilla
  /// attention
  torch::Tensor r_w_bias;
  torch::Tensor r_r_bias;
};

} // namespace xl::models
