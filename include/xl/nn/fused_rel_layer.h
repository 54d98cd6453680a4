// Transformer-XL's decoder layer for training as one autograd node with a hand-written backward:
// relative attention over [memory | segment], the output projection, dropout, residual and
// LayerNorm, then the feed-forward (ReLU) with its dropouts, residual and LayerNorm.
//
// The composed modules (RelPartialAttention, FeedForward) reach the same numbers through 91
// autograd nodes per layer, and a wt103_base step spent 770 operator calls a layer, most of them
// views, copies and casts, each a dispatch and often a kernel launch on a GPU. This runs the
// same products, softmax and LayerNorms as one node (507 calls a layer with its weights'
// gradients and update), on float32 or under bf16 autocast (products in bf16, softmax and
// LayerNorm in float32, as the composed path under autocast), drawing its dropout masks as
// nn::dropout does on each device.
//
// Layout: heads are head-major [H, B, len, Dh], so that the content scores are one batched
// product over H B and the position scores one over H (the position keys are shared by the
// batch); the relative shift is a strided view forward and its transpose backward, which relies
// on the future being masked (a causal mask, as Transformer-XL's always is).
#pragma once

#include <torch/torch.h>

#include "xl/nn/decoder_layer_options.h"
#include "xl/nn/rel_partial_attention.h"

namespace xl::nn {

/// Whether `options` describe a layer fused_rel_layer computes: post-LN, ReLU, fused set.
bool fused_rel_layer_applies(const DecoderLayerOptions& options);

/// The weights of one decoder layer, as RelDecoderLayer holds them.
struct RelLayerWeights {
  torch::Tensor qkv;   // [3 H Dh, D]
  torch::Tensor r;     // [H Dh, D]
  torch::Tensor o;     // [D, H Dh]
  torch::Tensor ln1_w; // [D], after the attention
  torch::Tensor ln1_b;
  torch::Tensor fc1_w; // [F, D]
  torch::Tensor fc1_b; // [F]
  torch::Tensor fc2_w; // [D, F]
  torch::Tensor fc2_b; // [D]
  torch::Tensor ln2_w; // [D], after the feed-forward
  torch::Tensor ln2_b;
};

/// h [L, B, D], rel (r [S, D], u, v [H, Dh]), mask [L, S] (true = hidden; the future
/// must be), mem [M, B, D] or undefined -> [L, B, D], equal to the composed layer's forward and
/// gradients up to float rounding. `training`: dropouts on.
torch::Tensor fused_rel_layer(
    const DecoderLayerOptions& options,
    const RelLayerWeights& weights,
    bool training,
    const torch::Tensor& h,
    const RelativeTerms& rel,
    const torch::Tensor& mask,
    const torch::Tensor& mem);

} // namespace xl::nn
