#include "xl/models/transformer_xl/hf.h"

#include <fmt/format.h>

#include "xl/models/transformer_xl/config.h"
#include "xl/models/transformer_xl/family.h"
#include "xl/nn/rel_decoder_layer.h"
#include "xl/util/error.h"

namespace xl::models {

namespace {

// `p` under HF's `name` as it is; `tied`: an alias of a tensor listed elsewhere.
void add(std::vector<HFTensor>& out, std::string name, torch::Tensor p, bool tied = false) {
  add_hf_tensor(out, std::move(name), std::move(p), {}, tied);
}

// The adaptive input's tables and projections, and the shared u/v biases.
void add_embedding(std::vector<HFTensor>& out, TransformerXLImpl& model) {
  const std::string emb = "transformer.word_emb.";
  auto& word_emb = *model.word_emb;
  for (size_t i = 0; i < word_emb.emb_layers->size(); ++i) {
    add(out, fmt::format("{}emb_layers.{}.weight", emb, i), word_emb.weight(i));
  }
  for (size_t i = 0; i < word_emb.emb_projs->size(); ++i) {
    add(out, fmt::format("{}emb_projs.{}", emb, i), word_emb.proj(i));
  }
  if (!model.options.untie_r()) {
    add(out, "transformer.r_w_bias", model.r_w_bias);
    add(out, "transformer.r_r_bias", model.r_r_bias);
  }
}

// Layer `l`: its u/v biases (its rows, or HF's copies of the shared pair), attention and
// feed-forward.
void add_layer(std::vector<HFTensor>& out, TransformerXLImpl& model, int64_t l) {
  const auto layer = model.layers->ptr<nn::RelDecoderLayerImpl>(static_cast<size_t>(l));
  const std::string hf = fmt::format("transformer.layers.{}.", l);
  if (model.options.untie_r()) {
    add_hf_tensor(out, hf + "dec_attn.r_w_bias", model.r_w_bias, hf_row(l));
    add_hf_tensor(out, hf + "dec_attn.r_r_bias", model.r_r_bias, hf_row(l));
  } else { // HF registers the shared pair in every layer too
    add(out, hf + "dec_attn.r_w_bias", model.r_w_bias, true);
    add(out, hf + "dec_attn.r_r_bias", model.r_r_bias, true);
  }
  auto& attn = *layer->rel_attn;
  add(out, hf + "dec_attn.qkv_net.weight", attn.qkv_net->weight);
  add(out, hf + "dec_attn.r_net.weight", attn.r_net->weight);
  add(out, hf + "dec_attn.o_net.weight", attn.o_net->weight);
  add(out, hf + "dec_attn.layer_norm.weight", attn.layer_norm->weight);
  add(out, hf + "dec_attn.layer_norm.bias", attn.layer_norm->bias);
  auto& ff = *layer->pos_ff;
  add(out, hf + "pos_ff.CoreNet.0.weight", ff.fc1->weight);
  add(out, hf + "pos_ff.CoreNet.0.bias", ff.fc1->bias);
  add(out, hf + "pos_ff.CoreNet.3.weight", ff.fc2->weight);
  add(out, hf + "pos_ff.CoreNet.3.bias", ff.fc2->bias);
  add(out, hf + "pos_ff.layer_norm.weight", ff.layer_norm->weight);
  add(out, hf + "pos_ff.layer_norm.bias", ff.layer_norm->bias);
}

// The adaptive softmax: each bin's weight (tied to the input table or not), bias and projection
// (tied or not), and the tail clusters.
void add_softmax(std::vector<HFTensor>& out, TransformerXLImpl& model) {
  auto& crit = *model.crit;
  const bool tie_weight = crit.options.tie_weight();
  for (size_t i = 0; i < crit.out_biases.size(); ++i) {
    add(out, fmt::format("crit.out_layers.{}.weight", i), crit.out_weights[i], tie_weight);
    add(out, fmt::format("crit.out_layers.{}.bias", i), crit.out_biases[i]);
  }
  const auto& tie_projs = crit.options.tie_projs();
  for (size_t i = 0; i < crit.out_projs.size(); ++i) {
    if (crit.out_projs[i].defined()) {
      add(out,
          fmt::format("crit.out_projs.{}", i),
          crit.out_projs[i],
          i < tie_projs.size() && tie_projs[i]);
    }
  }
  if (crit.cluster_weight.defined()) {
    add(out, "crit.cluster_weight", crit.cluster_weight);
    add(out, "crit.cluster_bias", crit.cluster_bias);
  }
}

} // namespace

std::vector<HFTensor> hf_tensors(TransformerXLImpl& model) {
  TORCH_CHECK(model.options.relative(), "Hugging Face TransfoXL has relative attention only");
  std::vector<HFTensor> out;
  add_embedding(out, model);
  for (int64_t l = 0; l < model.options.stack().n_layer(); ++l) {
    add_layer(out, model, l);
  }
  add_softmax(out, model);
  return out;
}

void import_hf_transfo_xl(
    TransformerXLImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options) {
  torch::NoGradGuard no_grad;
  HFImporter in(weights, "Transformer-XL");
  in.take(hf_tensors(model));
  // The sinusoid's frequencies are recomputed, not read.
  in.ignore("transformer.pos_emb.inv_freq");
  auto& crit = *model.crit;
  if (options.reverse_clusters && crit.cluster_weight.defined()) {
    crit.cluster_weight.copy_(crit.cluster_weight.flip(0));
    crit.cluster_bias.copy_(crit.cluster_bias.flip(0));
  }
  in.finish();
}

nlohmann::json transfo_xl_config(const config::Config& config, int64_t n_token, int64_t eos_id) {
  const auto& m = config.model;
  const auto& txl = m.section<TransformerXLConfig>();
  if (txl.attn_type != AttnType::kRelative) {
    throw UserError(fmt::format(
        "Hugging Face's TransfoXL has relative attention only; this run's "
        "model.transformer_xl.attn_type is {}",
        config::choice_name(txl.attn_type)));
  }
  const auto options = transformer_xl_options(config, n_token);
  const auto& adaptive = options.output().adaptive();
  const auto lengths = options.lengths().with(transformer_xl_eval_span(config, false));
  std::vector<bool> tie_projs = options.output().tie_projs();
  if (tie_projs.empty()) {
    tie_projs.assign(adaptive.cutoffs().size() + 1, false);
  }
  bool all_but_first = !tie_projs[0];
  for (size_t i = 1; i < tie_projs.size(); ++i) {
    all_but_first = all_but_first && tie_projs[i];
  }
  return {
      {"architectures", {"TransfoXLLMHeadModel"}},
      {"model_type", "transfo-xl"},
      {"vocab_size", n_token},
      {"cutoffs", adaptive.cutoffs()},
      {"d_model", m.d_model},
      {"d_embed", adaptive.d_embed()},
      {"n_head", m.n_head},
      {"d_head", m.d_head},
      {"d_inner", m.d_inner},
      {"div_val", adaptive.div_val()},
      {"pre_lnorm", m.pre_lnorm},
      {"n_layer", m.n_layer},
      {"mem_len", lengths.mem_len},
      {"clamp_len", lengths.clamp_len},
      {"same_length", lengths.same_length},
      {"attn_type", 0},
      {"sample_softmax", -1},
      {"adaptive", true},
      {"dropout", m.dropout},
      {"dropatt", m.dropatt},
      {"untie_r", txl.untie_r},
      {"tie_word_embeddings", options.output().tie_weight()},
      {"tie_projs", tie_projs},
      {"proj_share_all_but_first", all_but_first},
      {"layer_norm_epsilon", m.layer_norm_eps},
      {"init", config::choice_name(m.init)},
      {"init_range", m.init_range},
      {"init_std", m.init_std},
      {"proj_init_std", txl.proj_init_std},
      {"eos_token_id", eos_id},
  };
}

} // namespace xl::models
