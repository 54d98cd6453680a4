// XLNet under Hugging Face's names (XLNetLMHeadModel; the classification head under
// XLNetForSequenceClassification's), for importing converted checkpoints and the parity check's
// weights, and for exporting a run. HF keeps [D, H, Dh] kernels, xl one fused q/k/v Linear:
//
// clang-format off
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
// lm_loss.weight is tied to the word embedding and must equal it when present.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "xl/config/schema.h"
#include "xl/io/safetensors.h"
#include "xl/models/hf_tensor.h"
#include "xl/models/xlnet/model.h"

namespace xl::models {

/// Every tensor of `model` under XLNetLMHeadModel's names (the classification head, when there
/// is one, under XLNetForSequenceClassification's), each xl parameter once untied.
std::vector<HFTensor> hf_tensors(XLNetImpl& model);

/// Copies every parameter of `model` from `weights` (XLNetLMHeadModel names); problems as
/// import_hf_transfo_xl reports them.
void import_hf_xlnet(XLNetImpl& model, const io::SafeTensors& weights);

/// The config.json of XLNetLMHeadModel or XLNetForSequenceClassification for `config`'s model
/// over `n_token` pieces; a UserError for what HF cannot express (d_head * n_head != d_model,
/// the mean summary over real positions).
nlohmann::json xlnet_config(const config::Config& config, int64_t n_token);

} // namespace xl::models
