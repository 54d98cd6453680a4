// Importing weights stored under Hugging Face's names (safetensors), e.g. converted pretrained
// checkpoints or the parity check's reference weights: TransfoXLLMHeadModel for Transformer-XL,
// XLNetLMHeadModel for XLNet.
//
// clang-format off
// Transformer-XL (HF -> xl), l = layer, i = adaptive bin:
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
// XLNet (HF -> xl); HF keeps [D, H, Dh] kernels, xl one fused q/k/v Linear:
//   transformer.word_embedding.weight           -> word_embedding.weight (lm_loss.weight: tied)
//   transformer.mask_emb                        -> mask_emb
//   transformer.layer.l.rel_attn.{q,k,v}        -> rows of layers.l.rel_attn.qkv_net.weight,
//                                                  transposed, as [D, H, Dh]
//   transformer.layer.l.rel_attn.o / r          -> layers.l.rel_attn.o_net.weight / r_net.weight
//   transformer.layer.l.rel_attn.r_{w,r,s}_bias -> r_{w,r,s}_bias[l] (untie_r), or the shared
//                                                  r_{w,r,s}_bias (layer 0 owns it, the others
//                                                  are copies that must agree)
//   transformer.layer.l.rel_attn.seg_embed      -> layers.l.rel_attn.seg_embed
//   transformer.layer.l.rel_attn.layer_norm.*   -> layers.l.rel_attn.layer_norm.*
//   transformer.layer.l.ff.layer_{1,2}.*        -> layers.l.ff.fc{1,2}.*
//   transformer.layer.l.ff.layer_norm.*         -> layers.l.ff.layer_norm.*
//   lm_loss.bias                                -> lm_bias
// clang-format on
// Tied entries (out_layers weights, shared out_projs, lm_loss.weight) must equal the values they
// are tied to; the sinusoid buffer transformer.pos_emb.inv_freq is recomputed, not read.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "xl/io/safetensors.h"
#include "xl/models/transformer_xl.h"
#include "xl/models/xlnet.h"

namespace xl::models {

struct HFImportOptions {
  /// The checkpoint orders tail clusters like kimiyoung's/NVIDIA's PyTorch code
  /// (cluster i at cluster_weight row n_clusters - i) instead of HF's forward
  /// order (row i - 1): reverse them.
  bool reverse_clusters = false;
};

/// One tensor of a Hugging Face model and where it lives in xl.
struct HFTensor {
  std::string name;
  /// the xl parameter
  torch::Tensor parameter;
  /// the HF tensor as a view of the parameter (a row of per-layer biases, a transposed slice of
  /// a fused projection); empty: the parameter itself
  std::function<torch::Tensor(const torch::Tensor&)> view;
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

/// Every tensor of `model` under XLNetLMHeadModel's names (the classification head, when there
/// is one, under XLNetForSequenceClassification's), each xl parameter once untied.
std::vector<HFTensor> hf_tensors(XLNetImpl& model);

/// The tensors of whichever family `model` is.
std::vector<HFTensor> hf_tensors(LanguageModelImpl& model);

/// Copies every parameter of `model` from `weights`. Missing names, names left
/// over, shape mismatches and tied values that differ are UserErrors listing
/// what is wrong.
void import_hf_transfo_xl(
    TransformerXLImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options = {});

/// The same for XLNet (XLNetLMHeadModel names).
void import_hf_xlnet(XLNetImpl& model, const io::SafeTensors& weights);

/// Either of the above, for whichever family `model` is.
void import_hf(
    LanguageModelImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options = {});

} // namespace xl::models
