#include "xl/models/hf_import.h"

#include <fmt/format.h>

#include <set>

#include "xl/nn/rel_decoder_layer.h"
#include "xl/nn/two_stream_layer.h"

#include "xl/util/error.h"

namespace xl::models {

namespace {

class Importer {
 public:
  Importer(const io::SafeTensors& weights, std::string family)
      : weights_(weights), family_(std::move(family)) {}

  // Copies or checks each of `tensors`.
  void take(const std::vector<HFTensor>& tensors) {
    for (const auto& t : tensors) {
      if (t.tied) {
        check_tied(t.name, t.value());
      } else {
        copy(t.name, t.value());
      }
    }
  }

  // Copies `name` into `dest` (shapes must agree).
  void copy(const std::string& name, const torch::Tensor& dest) {
    if (!weights_.contains(name)) {
      missing_.push_back(name);
      return;
    }
    used_.insert(name);
    const auto& source = weights_.at(name);
    if (source.sizes() != dest.sizes()) {
      problems_.push_back(fmt::format(
          "{}: shape [{}] in the file, [{}] in the model",
          name,
          fmt::join(source.sizes(), ", "),
          fmt::join(dest.sizes(), ", ")));
      return;
    }
    dest.copy_(source);
  }

  // A tied entry: optional in the file, and equal to `value` when present.
  void check_tied(const std::string& name, const torch::Tensor& value) {
    if (!weights_.contains(name)) {
      return;
    }
    used_.insert(name);
    const auto& source = weights_.at(name);
    if (source.sizes() != value.sizes() ||
        !torch::equal(source.to(value.dtype()), value)) {
      problems_.push_back(
          name + ": the model ties it, but the file holds different values");
    }
  }

  void ignore(const std::string& name) {
    used_.insert(name);
  }

  void finish() {
    for (const auto& name : weights_.names()) {
      if (used_.count(name) == 0) {
        problems_.push_back(name + ": in the file but not in the model");
      }
    }
    for (const auto& name : missing_) {
      problems_.push_back(name + ": missing from the file");
    }
    if (!problems_.empty()) {
      throw UserError(fmt::format(
          "cannot import {} into this {} ({} problems):\n  {}",
          weights_.path().string(),
          family_,
          problems_.size(),
          fmt::join(problems_, "\n  ")));
    }
  }

 private:
  const io::SafeTensors& weights_;
  std::string family_;
  std::set<std::string> used_;
  std::vector<std::string> missing_;
  std::vector<std::string> problems_;
};

} // namespace

torch::Tensor HFTensor::value() const {
  return view ? view(parameter) : parameter;
}

torch::Tensor HFTensor::grad() const {
  const auto& g = parameter.grad();
  return view && g.defined() ? view(g) : g;
}

namespace {

std::function<torch::Tensor(const torch::Tensor&)> row(int64_t i) {
  return [i](const torch::Tensor& t) { return t[i]; };
}

} // namespace

std::vector<HFTensor> hf_tensors(TransformerXLImpl& model) {
  TORCH_CHECK(
      model.options.relative(),
      "Hugging Face TransfoXL has relative attention only");
  const auto& o = model.options;
  std::vector<HFTensor> out;
  const auto own = [&](std::string name, torch::Tensor p) {
    out.push_back({std::move(name), std::move(p), {}, false});
  };
  const auto tied = [&](std::string name, torch::Tensor p) {
    out.push_back({std::move(name), std::move(p), {}, true});
  };
  const std::string emb = "transformer.word_emb.";
  auto& word_emb = *model.word_emb;
  for (size_t i = 0; i < word_emb.emb_layers->size(); ++i) {
    own(fmt::format("{}emb_layers.{}.weight", emb, i), word_emb.weight(i));
  }
  for (size_t i = 0; i < word_emb.emb_projs->size(); ++i) {
    own(fmt::format("{}emb_projs.{}", emb, i), word_emb.proj(i));
  }
  if (!o.untie_r()) {
    own("transformer.r_w_bias", model.r_w_bias);
    own("transformer.r_r_bias", model.r_r_bias);
  }
  for (int64_t l = 0; l < o.n_layer(); ++l) {
    const auto layer =
        model.layers->ptr<nn::RelDecoderLayerImpl>(static_cast<size_t>(l));
    const std::string hf = fmt::format("transformer.layers.{}.", l);
    if (o.untie_r()) {
      out.push_back({hf + "dec_attn.r_w_bias", model.r_w_bias, row(l), false});
      out.push_back({hf + "dec_attn.r_r_bias", model.r_r_bias, row(l), false});
    } else { // HF registers the shared pair in every layer too
      tied(hf + "dec_attn.r_w_bias", model.r_w_bias);
      tied(hf + "dec_attn.r_r_bias", model.r_r_bias);
    }
    auto& attn = *layer->rel_attn;
    own(hf + "dec_attn.qkv_net.weight", attn.qkv_net->weight);
    own(hf + "dec_attn.r_net.weight", attn.r_net->weight);
    own(hf + "dec_attn.o_net.weight", attn.o_net->weight);
    own(hf + "dec_attn.layer_norm.weight", attn.layer_norm->weight);
    own(hf + "dec_attn.layer_norm.bias", attn.layer_norm->bias);
    auto& ff = *layer->pos_ff;
    own(hf + "pos_ff.CoreNet.0.weight", ff.fc1->weight);
    own(hf + "pos_ff.CoreNet.0.bias", ff.fc1->bias);
    own(hf + "pos_ff.CoreNet.3.weight", ff.fc2->weight);
    own(hf + "pos_ff.CoreNet.3.bias", ff.fc2->bias);
    own(hf + "pos_ff.layer_norm.weight", ff.layer_norm->weight);
    own(hf + "pos_ff.layer_norm.bias", ff.layer_norm->bias);
  }
  auto& crit = *model.crit;
  const bool tie_weight = crit.options.tie_weight();
  for (size_t i = 0; i < crit.out_biases.size(); ++i) {
    const std::string name = fmt::format("crit.out_layers.{}.weight", i);
    if (tie_weight) {
      tied(name, crit.out_weights[i]);
    } else {
      own(name, crit.out_weights[i]);
    }
    own(fmt::format("crit.out_layers.{}.bias", i), crit.out_biases[i]);
  }
  const auto& tie_projs = crit.options.tie_projs();
  for (size_t i = 0; i < crit.out_projs.size(); ++i) {
    const auto& proj = crit.out_projs[i];
    if (!proj.defined()) {
      continue;
    }
    const std::string name = fmt::format("crit.out_projs.{}", i);
    if (i < tie_projs.size() && tie_projs[i]) {
      tied(name, proj);
    } else {
      own(name, proj);
    }
  }
  if (crit.cluster_weight.defined()) {
    own("crit.cluster_weight", crit.cluster_weight);
    own("crit.cluster_bias", crit.cluster_bias);
  }
  return out;
}

void import_hf_transfo_xl(
    TransformerXLImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options) {
  torch::NoGradGuard no_grad;
  Importer in(weights, "Transformer-XL");
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

std::vector<HFTensor> hf_tensors(XLNetImpl& model) {
  const auto& o = model.options;
  const auto& attention = o.layer().attention();
  const int64_t d_model = attention.d_model();
  const int64_t n_head = attention.n_head();
  const int64_t d_head = attention.d_head();
  const int64_t inner = n_head * d_head;
  std::vector<HFTensor> out;
  const auto add = [&](std::string name,
                       torch::Tensor p,
                       std::function<torch::Tensor(const torch::Tensor&)> view,
                       bool tied) {
    out.push_back({std::move(name), std::move(p), std::move(view), tied});
  };
  // HF's [D, H, Dh] kernel as a view of a [H * Dh, D] Linear weight (rows from `first`).
  const auto kernel = [=](int64_t first) {
    return [=](const torch::Tensor& w) {
      return w.narrow(0, first, inner).t().view({d_model, n_head, d_head});
    };
  };
  add("transformer.mask_emb", model.mask_emb, {}, false);
  add("transformer.word_embedding.weight",
      model.word_embedding->weight,
      {},
      false);
  for (int64_t l = 0; l < o.n_layer(); ++l) {
    const auto layer =
        model.layers->ptr<nn::TwoStreamLayerImpl>(static_cast<size_t>(l));
    const std::string hf = fmt::format("transformer.layer.{}.", l);
    auto& attn = *layer->rel_attn;
    add(hf + "rel_attn.q", attn.qkv_net->weight, kernel(0), false);
    add(hf + "rel_attn.k", attn.qkv_net->weight, kernel(inner), false);
    add(hf + "rel_attn.v", attn.qkv_net->weight, kernel(2 * inner), false);
    add(
        hf + "rel_attn.o",
        attn.o_net->weight,
        [=](const torch::Tensor& w) {
          return w.view({d_model, n_head, d_head});
        },
        false);
    add(hf + "rel_attn.r", attn.r_net->weight, kernel(0), false);
    for (const auto& [name, bias] :
         {std::pair<const char*, torch::Tensor>{"r_r_bias", model.r_r_bias},
          {"r_s_bias", model.r_s_bias},
          {"r_w_bias", model.r_w_bias}}) {
      if (o.untie_r()) {
        add(hf + "rel_attn." + name, bias, row(l), false);
      } else { // HF keeps a copy in every layer; layer 0's stands for the shared one
        add(hf + "rel_attn." + name, bias, {}, l > 0);
      }
    }
    add(hf + "rel_attn.seg_embed", attn.seg_embed, {}, false);
    add(hf + "rel_attn.layer_norm.weight", attn.layer_norm->weight, {}, false);
    add(hf + "rel_attn.layer_norm.bias", attn.layer_norm->bias, {}, false);
    auto& ff = *layer->ff;
    add(hf + "ff.layer_norm.weight", ff.layer_norm->weight, {}, false);
    add(hf + "ff.layer_norm.bias", ff.layer_norm->bias, {}, false);
    add(hf + "ff.layer_1.weight", ff.fc1->weight, {}, false);
    add(hf + "ff.layer_1.bias", ff.fc1->bias, {}, false);
    add(hf + "ff.layer_2.weight", ff.fc2->weight, {}, false);
    add(hf + "ff.layer_2.bias", ff.fc2->bias, {}, false);
  }
  if (model.summary) {
    add("sequence_summary.summary.weight", model.summary->weight, {}, false);
    add("sequence_summary.summary.bias", model.summary->bias, {}, false);
    add("logits_proj.weight", model.logits_proj->weight, {}, false);
    add("logits_proj.bias", model.logits_proj->bias, {}, false);
  } else {
    add("lm_loss.weight", model.word_embedding->weight, {}, true);
    add("lm_loss.bias", model.lm_bias, {}, false);
  }
  return out;
}

std::vector<HFTensor> hf_tensors(LanguageModelImpl& model) {
  if (auto* txl = dynamic_cast<TransformerXLImpl*>(&model)) {
    return hf_tensors(*txl);
  }
  if (auto* xlnet = dynamic_cast<XLNetImpl*>(&model)) {
    return hf_tensors(*xlnet);
  }
  TORCH_CHECK(false, "no Hugging Face names for this model family");
}

void import_hf_xlnet(XLNetImpl& model, const io::SafeTensors& weights) {
  torch::NoGradGuard no_grad;
  Importer in(weights, "XLNet");
  in.take(hf_tensors(model));
  in.finish();
}

void import_hf(
    LanguageModelImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& options) {
  if (auto* txl = dynamic_cast<TransformerXLImpl*>(&model)) {
    import_hf_transfo_xl(*txl, weights, options);
  } else if (auto* xlnet = dynamic_cast<XLNetImpl*>(&model)) {
    import_hf_xlnet(*xlnet, weights);
  } else {
    throw UserError("no Hugging Face import for this model family");
  }
}

} // namespace xl::models
