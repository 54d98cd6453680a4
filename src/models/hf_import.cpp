#include "xl/models/hf_import.h"

#include <fmt/format.h>

#include <set>

#include "xl/nn/rel_decoder_layer.h"

#include "xl/util/error.h"

namespace xl::models {

namespace {

class Importer {
 public:
  explicit Importer(const io::SafeTensors& weights) : weights_(weights) {}

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
          "cannot import {} into this Transformer-XL ({} problems):\n  {}",
          weights_.path().string(),
          problems_.size(),
          fmt::join(problems_, "\n  ")));
    }
  }

 private:
  const io::SafeTensors& weights_;
  std::set<std::string> used_;
  std::vector<std::string> missing_;
  std::vector<std::string> problems_;
};

} // namespace

torch::Tensor HFTensor::value() const {
  return row ? parameter[*row] : parameter;
}

torch::Tensor HFTensor::grad() const {
  const auto& g = parameter.grad();
  return row && g.defined() ? g[*row] : g;
}

std::vector<HFTensor> hf_tensors(TransformerXLImpl& model) {
  TORCH_CHECK(
      model.options.relative(),
      "Hugging Face TransfoXL has relative attention only");
  const auto& o = model.options;
  std::vector<HFTensor> out;
  const auto own = [&](std::string name, torch::Tensor p) {
    out.push_back({std::move(name), std::move(p), std::nullopt, false});
  };
  const auto tied = [&](std::string name, torch::Tensor p) {
    out.push_back({std::move(name), std::move(p), std::nullopt, true});
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
      out.push_back({hf + "dec_attn.r_w_bias", model.r_w_bias, l, false});
      out.push_back({hf + "dec_attn.r_r_bias", model.r_r_bias, l, false});
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
  Importer in(weights);
  for (const auto& t : hf_tensors(model)) {
    if (t.tied) {
      in.check_tied(t.name, t.value());
    } else {
      in.copy(t.name, t.value());
    }
  }
  // The sinusoid's frequencies are recomputed, not read.
  in.ignore("transformer.pos_emb.inv_freq");
  auto& crit = *model.crit;
  if (options.reverse_clusters && crit.cluster_weight.defined()) {
    crit.cluster_weight.copy_(crit.cluster_weight.flip(0));
    crit.cluster_bias.copy_(crit.cluster_bias.flip(0));
  }
  in.finish();
}

} // namespace xl::models
