// Transformer-XL under Hugging Face's names (TransfoXLLMHeadModel), for importing converted
// checkpoints and the parity check's weights, and for exporting a run:
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
// clang-format on
// Tied entries (out_layers weights, shared out_projs) must equal the values they are tied to;
// the sinusoid buffer transformer.pos_emb.inv_freq is recomputed, not read. HF runs a model with
// the lengths its config holds, so the exported mem_len, clamp_len and same_length are the
// evaluation's (as in HF's published transfo-xl-wt103), not training's.
#pragma once

#include <nlohmann/json.hpp>

#include <vector>

#include "xl/config/schema.h"
#include "xl/io/safetensors.h"
#include "xl/models/hf_tensor.h"
#include "xl/models/transformer_xl/model.h"

namespace xl::models {

/// Every tensor of `model` under its Hugging Face name, in HF's order; every xl parameter appears
/// exactly once untied. Relative attention only.
std::vector<HFTensor> hf_tensors(TransformerXLImpl& model);

/// Copies every parameter of `model` from `weights`. Missing names, names left over, shape
/// mismatches and tied values that differ are UserErrors listing what is wrong.
void import_hf_transfo_xl(
    TransformerXLImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options = {});

/// TransfoXLLMHeadModel's config.json for `config`'s model over `n_token` words, `eos_id` the
/// vocabulary's <eos>; a UserError for attention HF does not have.
nlohmann::json transfo_xl_config(const config::Config& config, int64_t n_token, int64_t eos_id);

} // namespace xl::models
