#include "xl/models/xlnet/hf.h"

#include <fmt/format.h>

#include "xl/formats/sentencepiece.h"
#include "xl/models/xlnet/config.h"
#include "xl/nn/two_stream_layer.h"
#include "xl/util/error.h"

namespace xl::models {

namespace {

using View = std::function<torch::Tensor(const torch::Tensor&)>;

// Layer `l`: HF's [D, H, Dh] q/k/v/o/r kernels as views of xl's fused Linear weights, the
// r_w/r_r/r_s biases (rows of the untied ones, or HF's per-layer copies of the shared ones), the
// segment embedding, LayerNorms and the feed-forward.
void add_layer(std::vector<HFTensor>& out, XLNetImpl& model, int64_t l) {
  const auto& attention = model.options.stack().layer().attention();
  const int64_t d_model = attention.d_model();
  const int64_t n_head = attention.n_head();
  const int64_t d_head = attention.d_head();
  const int64_t inner = n_head * d_head;
  // HF's [D, H, Dh] kernel as a view of a [H * Dh, D] Linear weight (rows from `first`).
  const auto kernel = [=](int64_t first) -> View {
    return [=](const torch::Tensor& w) {
      return w.narrow(0, first, inner).t().view({d_model, n_head, d_head});
    };
  };
  const auto layer = model.layers->ptr<nn::TwoStreamLayerImpl>(static_cast<size_t>(l));
  const std::string hf = fmt::format("transformer.layer.{}.", l);
  auto& attn = *layer->rel_attn;
  add_hf_tensor(out, hf + "rel_attn.q", attn.qkv_net->weight, kernel(0));
  add_hf_tensor(out, hf + "rel_attn.k", attn.qkv_net->weight, kernel(inner));
  add_hf_tensor(out, hf + "rel_attn.v", attn.qkv_net->weight, kernel(2 * inner));
  add_hf_tensor(out, hf + "rel_attn.o", attn.o_net->weight, [=](const torch::Tensor& w) {
    return w.view({d_model, n_head, d_head});
  });
  add_hf_tensor(out, hf + "rel_attn.r", attn.r_net->weight, kernel(0));
  for (const auto& [name, bias] :
       {std::pair<const char*, torch::Tensor>{"r_r_bias", model.r_r_bias},
        {"r_s_bias", model.r_s_bias},
        {"r_w_bias", model.r_w_bias}}) {
    if (model.options.untie_r()) {
      add_hf_tensor(out, hf + "rel_attn." + name, bias, hf_row(l));
    } else { // HF keeps a copy in every layer; layer 0's stands for the shared one
      add_hf_tensor(out, hf + "rel_attn." + name, bias, {}, l > 0);
    }
  }
  add_hf_tensor(out, hf + "rel_attn.seg_embed", attn.seg_embed);
  add_hf_tensor(out, hf + "rel_attn.layer_norm.weight", attn.layer_norm->weight);
  add_hf_tensor(out, hf + "rel_attn.layer_norm.bias", attn.layer_norm->bias);
  auto& ff = *layer->ff;
  add_hf_tensor(out, hf + "ff.layer_norm.weight", ff.layer_norm->weight);
  add_hf_tensor(out, hf + "ff.layer_norm.bias", ff.layer_norm->bias);
  add_hf_tensor(out, hf + "ff.layer_1.weight", ff.fc1->weight);
  add_hf_tensor(out, hf + "ff.layer_1.bias", ff.fc1->bias);
  add_hf_tensor(out, hf + "ff.layer_2.weight", ff.fc2->weight);
  add_hf_tensor(out, hf + "ff.layer_2.bias", ff.fc2->bias);
}

} // namespace

std::vector<HFTensor> hf_tensors(XLNetImpl& model) {
  std::vector<HFTensor> out;
  add_hf_tensor(out, "transformer.mask_emb", model.mask_emb);
  add_hf_tensor(out, "transformer.word_embedding.weight", model.word_embedding->weight);
  for (int64_t l = 0; l < model.options.stack().n_layer(); ++l) {
    add_layer(out, model, l);
  }
  if (model.summary) {
    add_hf_tensor(out, "sequence_summary.summary.weight", model.summary->weight);
    add_hf_tensor(out, "sequence_summary.summary.bias", model.summary->bias);
    add_hf_tensor(out, "logits_proj.weight", model.logits_proj->weight);
    add_hf_tensor(out, "logits_proj.bias", model.logits_proj->bias);
  } else {
    add_hf_tensor(out, "lm_loss.weight", model.word_embedding->weight, {}, true);
    add_hf_tensor(out, "lm_loss.bias", model.lm_bias);
  }
  return out;
}

void import_hf_xlnet(XLNetImpl& model, const io::SafeTensors& weights) {
  torch::NoGradGuard no_grad;
  HFImporter in(weights, "XLNet");
  in.take(hf_tensors(model));
  in.finish();
}

namespace {

// What HF's XLNet cannot express is a UserError.
void check_hf_expressible(const config::ModelConfig& m) {
  const auto& x = m.section<XLNetConfig>();
  if (m.d_head * m.n_head != m.d_model) {
    throw UserError(fmt::format(
        "Hugging Face's XLNet needs d_head * n_head = d_model; this run has {} * {} != {}",
        m.d_head,
        m.n_head,
        m.d_model));
  }
  if (x.n_class > 0 && x.summary != SequenceSummary::kLast) {
    // HF's "mean" summary averages the padding too, so it would score other numbers.
    throw UserError(
        "this run's classifier reads the mean of the real positions "
        "(model.xlnet.summary mean); Hugging Face's XLNetForSequenceClassification reads the "
        "last position or a mean that counts the padding, so it has no model for it");
  }
}

} // namespace

nlohmann::json xlnet_config(const config::Config& config, int64_t n_token) {
  const auto& m = config.model;
  const auto& x = m.section<XLNetConfig>();
  check_hf_expressible(m);
  const std::string activation = config::choice_name(x.ff_activation);
  nlohmann::json out = {
      {"architectures", {x.n_class > 0 ? "XLNetForSequenceClassification" : "XLNetLMHeadModel"}},
      {"model_type", "xlnet"},
      {"vocab_size", n_token},
      {"d_model", m.d_model},
      {"n_layer", m.n_layer},
      {"n_head", m.n_head},
      {"d_inner", m.d_inner},
      {"ff_activation", activation == "gelu_tanh" ? std::string("gelu_new") : activation},
      {"untie_r", true}, // HF keeps biases per layer; shared ones are exported to each
      {"attn_type", "bi"},
      {"layer_norm_eps", m.layer_norm_eps},
      {"dropout", m.dropout},
      {"mem_len", x.mem_len > 0 ? nlohmann::json(x.mem_len) : nlohmann::json()},
      {"reuse_len", x.reuse_len > 0 ? nlohmann::json(x.reuse_len) : nlohmann::json()},
      // A pretraining layout (half the rows reversed): HF's forward with it needs an even
      // batch, so a classifier, which never trained with it, leaves it out (a pipeline of one
      // text failed with IndexError); a language model keeps it as trained.
      {"bi_data", x.n_class > 0 ? false : x.bi_data},
      {"clamp_len", x.clamp_len},
      {"same_length", false},
      {"summary_type", "last"},
      {"summary_use_proj", true},
      {"summary_activation", "tanh"},
      {"summary_last_dropout", m.dropout},
      {"initializer_range", m.init_std},
      {"pad_token_id", formats::kPadId},
      {"bos_token_id", formats::kBosId},
      {"eos_token_id", formats::kEosId},
  };
  if (x.n_class > 0) {
    nlohmann::json id2label;
    nlohmann::json label2id;
    // The run's names of its classes, else Hugging Face's own default ones.
    for (int64_t c = 0; c < x.n_class; ++c) {
      const std::string name =
          x.labels.empty() ? fmt::format("LABEL_{}", c) : x.labels[static_cast<size_t>(c)];
      id2label[std::to_string(c)] = name;
      label2id[name] = c;
    }
    out["id2label"] = id2label;
    out["label2id"] = label2id;
  }
  return out;
}

} // namespace xl::models
