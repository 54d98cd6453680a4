#include "xl/models/xlnet/family.h"

#include "xl/config/visitors.h"
#include "xl/models/kit.h"
#include "xl/models/xlnet/config.h"
#include "xl/models/xlnet/data.h"
#include "xl/models/xlnet/hf.h"

namespace xl::models {

namespace {

nn::Activation activation(config::Activation a) {
  switch (a) {
    case config::Activation::kRelu:
      return nn::Activation::kRelu;
    case config::Activation::kGelu:
      return nn::Activation::kGelu;
    case config::Activation::kGeluTanh:
      return nn::Activation::kGeluTanh;
  }
  TORCH_CHECK(false, "unhandled activation");
}

} // namespace

XLNetOptions xlnet_options(const config::ModelConfig& m, int64_t n_token) {
  const auto& x = m.section<XLNetConfig>();
  XLNetLengths lengths;
  lengths.mem_len = x.mem_len;
  lengths.reuse_len = x.reuse_len;
  lengths.clamp_len = x.clamp_len;
  return XLNetOptions(
             n_token,
             stack_shape(
                 m,
                 nn::DecoderLayerOptions(attention_options(m), m.d_inner)
                     .activation(activation(x.ff_activation)))
                 .init(init_options(m).unit_layer_norm(true)))
      .untie_r(x.untie_r)
      .n_class(x.n_class)
      .summary(x.summary)
      .lengths(lengths);
}

namespace {

LanguageModel build(const config::Config& config, int64_t n_token) {
  auto options = xlnet_options(config.model, n_token);
  options.stack().checkpoint_layers(config.train.activation_checkpointing);
  return std::make_shared<XLNetImpl>(options);
}

Span eval_span(const config::Config& c, bool validation) {
  const auto& x = c.model.section<XLNetConfig>();
  Span span;
  span.mem_len = validation ? x.mem_len : c.eval.mem_len.value_or(x.mem_len);
  span.clamp_len = validation ? x.clamp_len : c.eval.clamp_len.value_or(x.clamp_len);
  return span;
}

// XLNet: per layer r_net and the segment embeddings besides q, k, v, o; the r_w, r_r, r_s
// biases shared or per layer; the tied LM head's bias or the classification head. Two
// streams; the LM scores num_predict rows per sequence.
MemoryShape memory_shape(const config::Config& c, int64_t n_token) {
  const XLNetOptions o = xlnet_options(c.model, n_token);
  MemoryShape f(static_cast<double>(o.stack().n_layer()), o.stack().layer());
  const LayerShape& l = f.layer;
  const auto v = static_cast<double>(o.n_token());
  const auto n_class = static_cast<double>(o.n_class());
  f.parameters = f.n_layer * (l.parameters(1) + 2 * l.hd) +
      3 * l.hd * (o.untie_r() ? f.n_layer : 1) + v * l.d + l.d + v +
      (n_class > 0 ? l.d * l.d + l.d + l.d * n_class + n_class : 0);
  f.largest = std::max(v * l.d, l.largest());
  f.streams = 2;
  f.mem_len = static_cast<double>(o.lengths().mem_len);
  f.classes = v;
  f.training_rows =
      n_class > 0 ? 0 : static_cast<double>(c.model.section<XLNetConfig>().num_predict);
  f.eval_rows = f.training_rows;
  return f;
}

nlohmann::json hf_config(const config::Config& config, const sources::Dataset& dataset) {
  return xlnet_config(config, dataset.vocab_size());
}

std::optional<std::vector<HFTensor>> hf_model_tensors(LanguageModelImpl& model) {
  auto* xlnet = dynamic_cast<XLNetImpl*>(&model);
  if (xlnet == nullptr) {
    return std::nullopt;
  }
  return hf_tensors(*xlnet);
}

void import_hf(
    LanguageModelImpl& model,
    const io::SafeTensors& weights,
    const HFImportOptions& /*options*/) {
  import_hf_xlnet(dynamic_cast<XLNetImpl&>(model), weights);
}

// Inside this namespace, its functions hide the models:: ones of the same names.
ModelFamily describe() {
  ModelFamily f;
  f.name = "xlnet";
  f.config.section = config::section_of<XLNetConfig>();
  f.config.validate = validate_xlnet;
  f.config.labelled = xlnet_labelled;
  f.config.labelled_when = "model.xlnet.n_class > 0";
  f.build = build;
  f.eval_span = eval_span;
  f.open_dataset = open_xlnet_dataset;
  f.random_dataset = random_xlnet_dataset;
  f.memory_shape = memory_shape;
  f.hf_config = hf_config;
  f.class_names = [](const config::Config& c) { return c.model.section<XLNetConfig>().labels; };
  f.hf_tensors = hf_model_tensors;
  f.import_hf = import_hf;
  f.no_sampling = "an XLNet run, whose permutation LM scores targets instead";
  return f;
}

} // namespace

ModelFamily xlnet_family() {
  return describe();
}

} // namespace xl::models
