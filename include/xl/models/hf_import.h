// Importing Transformer-XL weights stored under Hugging Face's TransfoXLLMHeadModel names
// (safetensors), e.g. converted pretrained checkpoints or the parity check's reference weights.
//
// clang-format off
// Name mapping (HF -> xl), l = layer, i = adaptive bin:
//   transformer.word_emb.emb_layers.i.weight    -> word_emb.emb_layers.i.weight
//   transformer.word_emb.emb_projs.i            -> word_emb.emb_projs.i
//   transformer.r_w_bias / r_r_bias             -> r_w_bias / r_r_bias (shared; the copies HF
//                                                  keeps in every layer must agree)
//   transformer.layers.l.dec_attn.r_w_bias      -> r_w_bias[l] (untie_r), same for r_r_bias
//   transformer.layers.l.dec_attn.{qkv_net,r_net,o_net,layer_norm}.*
//                                               -> layers.l.rel_attn.{...}.*
//   transformer.layers.l.pos_ff.CoreNet.0.*     -> layers.l.pos_ff.fc1.*
//   transformer.layers.l.pos_ff.CoreNet.3.*     -> layers.l.pos_ff.fc2.*
//   transformer.layers.l.pos_ff.layer_norm.*    -> layers.l.pos_ff.layer_norm.*
//   crit.out_layers.i.weight / .bias            -> crit.out_weight_i / crit.out_bias_i
//   crit.out_projs.i                            -> crit.out_proj_i
//   crit.cluster_weight / cluster_bias          -> crit.cluster_weight / cluster_bias
// clang-format on
// Tied entries (out_layers weights, shared out_projs) must equal the embedding's values; the
// sinusoid buffer transformer.pos_emb.inv_freq is recomputed, not read.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "xl/io/safetensors.h"
#include "xl/models/transformer_xl.h"

namespace xl::models {

struct HFImportOptions {
  /// The checkpoint orders tail clusters like kimiyoung's/NVIDIA's PyTorch code
  /// (cluster i at cluster_weight row n_clusters - i) instead of HF's forward
  /// order (row i - 1): reverse them.
  bool reverse_clusters = false;
};

/// One tensor of a TransfoXLLMHeadModel and where it lives in xl.
struct HFTensor {
  std::string name;
  /// the xl parameter
  torch::Tensor parameter;
  /// the tensor is this row of the parameter (per-layer u/v of untie_r)
  std::optional<int64_t> row;
  /// an alias of a tensor listed elsewhere (HF stores tied and shared tensors under several
  /// names): its values must agree, its gradient is counted once
  bool tied = false;

  torch::Tensor value() const;
  /// the parameter's gradient at this tensor (undefined before a backward pass)
  torch::Tensor grad() const;
};

/// Every tensor of `model` under its Hugging Face name, in HF's order; every xl parameter appears
/// exactly once untied. Relative attention only.
std::vector<HFTensor> hf_tensors(TransformerXLImpl& model);

/// Copies every parameter of `model` from `weights`. Missing names, names left
/// over, shape mismatches and tied values that differ are UserErrors listing
/// what is wrong.
void import_hf_transfo_xl(
    TransformerXLImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options = {});

} // namespace xl::models
