#include "xl/models/hf_export.h"

#include <fmt/format.h>

#include "xl/data/sentencepiece.h"
#include "xl/models/factory.h"
#include "xl/models/hf_import.h"
#include "xl/util/error.h"

namespace xl::models {

namespace {

nlohmann::json transfo_xl_config(
    const config::Config& config,
    int64_t n_token,
    int64_t eos_id) {
  const auto& m = config.model;
  const auto& txl = m.transformer_xl;
  if (txl.attn_type != config::AttnType::kRelative) {
    throw UserError(fmt::format(
        "Hugging Face's TransfoXL has relative attention only; this run's "
        "model.transformer_xl.attn_type is {}",
        config::choice_name(txl.attn_type)));
  }
  const auto options = transformer_xl_options(config, n_token);
  const auto& adaptive = options.output().adaptive();
  const auto lengths = options.lengths().with(eval_span(config, false));
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

nlohmann::json xlnet_config(const config::Config& config, int64_t n_token) {
  const auto& m = config.model;
  const auto& x = m.xlnet;
  if (m.d_head * m.n_head != m.d_model) {
    throw UserError(fmt::format(
        "Hugging Face's XLNet needs d_head * n_head = d_model; this run has {} * {} != {}",
        m.d_head,
        m.n_head,
        m.d_model));
  }
  if (x.n_class > 0 && x.summary != config::SequenceSummary::kLast) {
    // HF's "mean" summary averages the padding too, so it would score other numbers.
    throw UserError(
        "this run's classifier reads the mean of the real positions "
        "(model.xlnet.summary mean); Hugging Face's XLNetForSequenceClassification reads the "
        "last position or a mean that counts the padding, so it has no model for it");
  }
  const std::string activation = config::choice_name(x.ff_activation);
  nlohmann::json out = {
      {"architectures",
       {x.n_class > 0 ? "XLNetForSequenceClassification" : "XLNetLMHeadModel"}},
      {"model_type", "xlnet"},
      {"vocab_size", n_token},
      {"d_model", m.d_model},
      {"n_layer", m.n_layer},
      {"n_head", m.n_head},
      {"d_inner", m.d_inner},
      {"ff_activation",
       activation == "gelu_tanh" ? std::string("gelu_new") : activation},
      {"untie_r",
       true}, // HF keeps biases per layer; shared ones are exported to each
      {"attn_type", "bi"},
      {"layer_norm_eps", m.layer_norm_eps},
      {"dropout", m.dropout},
      {"mem_len", x.mem_len > 0 ? nlohmann::json(x.mem_len) : nlohmann::json()},
      {"reuse_len",
       x.reuse_len > 0 ? nlohmann::json(x.reuse_len) : nlohmann::json()},
      {"bi_data",
       x.bi_data}, // as trained; HF reverses half the rows' positions with it
      {"clamp_len", x.clamp_len},
      {"same_length", false},
      {"summary_type", "last"},
      {"summary_use_proj", true},
      {"summary_activation", "tanh"},
      {"summary_last_dropout", m.dropout},
      {"initializer_range", m.init_std},
      {"pad_token_id", data::kPadId},
      {"bos_token_id", data::kBosId},
      {"eos_token_id", data::kEosId},
  };
  if (x.n_class > 0) {
    nlohmann::json id2label;
    nlohmann::json label2id;
    for (int64_t c = 0; c < x.n_class; ++c) {
      id2label[std::to_string(c)] = fmt::format("LABEL_{}", c);
      label2id[fmt::format("LABEL_{}", c)] = c;
    }
    out["id2label"] = id2label;
    out["label2id"] = label2id;
  }
  return out;
}

} // namespace

nlohmann::json hf_config(
    const config::Config& config,
    int64_t n_token,
    int64_t eos_id) {
  switch (config.model.type) {
    case config::ModelType::kTransformerXL:
      return transfo_xl_config(config, n_token, eos_id);
    case config::ModelType::kXLNet:
      return xlnet_config(config, n_token);
    case config::ModelType::kCharTransformer:
      break;
  }
  throw UserError(
      "Hugging Face has no model for the character transformer (Al-Rfou et al.); export "
      "Transformer-XL or XLNet runs");
}

std::map<std::string, torch::Tensor> hf_state(LanguageModelImpl& model) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& t : hf_tensors(model)) {
    out.emplace(t.name, t.value().detach().to(torch::kCPU).contiguous());
  }
  return out;
}

} // namespace xl::models
