#include "xl/models/factory.h"

#include <fmt/format.h>

#include "xl/util/error.h"

namespace xl::models {

namespace {

nn::AttentionOptions attention_options(const config::ModelConfig& m) {
  return nn::AttentionOptions(m.d_model, m.n_head, m.d_head)
      .dropout(m.dropout)
      .dropatt(m.dropatt)
      .pre_lnorm(m.pre_lnorm)
      .layer_norm_eps(m.layer_norm_eps);
}

nn::InitOptions init_options(const config::ModelConfig& m) {
  return nn::InitOptions()
      .uniform(m.init == config::Init::kUniform)
      .range(m.init_range)
      .normal_std(m.init_std);
}

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

TransformerXLOptions transformer_xl_options(
    const config::Config& c,
    int64_t n_token) {
  const config::ModelConfig& m = c.model;
  const config::TransformerXLConfig& x = m.transformer_xl;
  if (!x.cutoffs.empty() && x.cutoffs.back() >= n_token) {
    throw ConfigError(fmt::format(
        "model.transformer_xl.cutoffs: the last cutoff {} must be below the vocabulary size {}",
        x.cutoffs.back(),
        n_token));
  }
  std::vector<bool> tie_projs = x.tie_projs;
  if (tie_projs.empty()) {
    // kimiyoung's default for adaptive softmax: every projection but the head's is shared.
    tie_projs.assign(x.cutoffs.size() + 1, true);
    tie_projs[0] = false;
  }
  const auto attention = attention_options(m);
  const auto adaptive =
      nn::AdaptiveOptions(n_token, x.d_embed.value_or(m.d_model), m.d_model)
          .cutoffs(x.cutoffs)
          .div_val(x.div_val);
  TransformerXLLengths lengths;
  lengths.mem_len = x.mem_len;
  lengths.ext_len = x.ext_len;
  lengths.clamp_len = x.clamp_len;
  lengths.same_length = x.same_length;
  return TransformerXLOptions(
             m.n_layer,
             nn::DecoderLayerOptions(attention, m.d_inner),
             nn::AdaptiveSoftmaxOptions(adaptive)
                 .tie_weight(x.tie_weight)
                 .tie_projs(tie_projs))
      .untie_r(x.untie_r)
      .relative(x.attn_type == config::AttnType::kRelative)
      .learned_positions(x.attn_type == config::AttnType::kLearned)
      .n_ctx(x.n_ctx.value_or(x.mem_len + c.train.tgt_len))
      .lengths(lengths)
      .init(init_options(m).proj_std(x.proj_init_std));
}

XLNetOptions xlnet_options(const config::ModelConfig& m, int64_t n_token) {
  const config::XLNetConfig& x = m.xlnet;
  XLNetLengths lengths;
  lengths.mem_len = x.mem_len;
  lengths.reuse_len = x.reuse_len;
  lengths.clamp_len = x.clamp_len;
  return XLNetOptions(
             n_token,
             m.n_layer,
             nn::DecoderLayerOptions(attention_options(m), m.d_inner)
                 .activation(activation(x.ff_activation)))
      .untie_r(x.untie_r)
      .n_class(x.n_class)
      .summary(
          x.summary == config::SequenceSummary::kMean ? SequenceSummary::kMean
                                                      : SequenceSummary::kLast)
      .lengths(lengths)
      .init(init_options(m).unit_layer_norm(true));
}

CharTransformerOptions char_transformer_options(
    const config::Config& c,
    int64_t n_token) {
  const config::ModelConfig& m = c.model;
  const config::CharTransformerConfig& x = m.char_transformer;
  CharLosses losses;
  losses.multiple_positions = x.multiple_positions;
  losses.schedule.n_layer = m.n_layer;
  losses.schedule.max_step = c.train.max_step;
  losses.schedule.intermediate = x.intermediate_layers;
  losses.schedule.decay = x.layer_decay == config::LayerDecay::kStep
      ? LayerDecay::kStep
      : LayerDecay::kLinear;
  losses.schedule.mean = x.layer_reduce == config::LayerReduce::kMean;
  losses.target_weights = x.target_weights;
  return CharTransformerOptions(
             n_token,
             m.n_layer,
             nn::DecoderLayerOptions(attention_options(m), m.d_inner)
                 .inner_dropout(x.relu_dropout))
      .n_ctx(x.n_ctx)
      .per_layer_positions(x.positions == config::PositionTables::kPerLayer)
      .losses(losses)
      .init(init_options(m));
}

LanguageModel build_model(const config::Config& config, int64_t n_token) {
  const config::ModelConfig& model = config.model;
  const bool checkpoint = config.train.activation_checkpointing;
  switch (model.type) {
    case config::ModelType::kTransformerXL:
      return std::make_shared<TransformerXLImpl>(
          transformer_xl_options(config, n_token)
              .checkpoint_layers(checkpoint));
    case config::ModelType::kXLNet:
      return std::make_shared<XLNetImpl>(
          xlnet_options(model, n_token).checkpoint_layers(checkpoint));
    case config::ModelType::kCharTransformer:
      return std::make_shared<CharTransformerImpl>(
          char_transformer_options(config, n_token)
              .checkpoint_layers(checkpoint));
  }
  TORCH_CHECK(false, "unhandled model.type");
}

Span training_span(const config::ModelConfig& model) {
  Span span;
  switch (model.type) {
    case config::ModelType::kTransformerXL:
      span.mem_len = model.transformer_xl.mem_len;
      span.ext_len = model.transformer_xl.ext_len;
      break;
    case config::ModelType::kXLNet:
      span.mem_len = model.xlnet.mem_len;
      break;
    case config::ModelType::kCharTransformer: // nothing carried between windows
      span.mem_len = 0;
      break;
  }
  return span;
}

bool trained_without_memory(const config::Config& c) {
  const auto source = c.sources.find("eval.mem_len");
  const bool asked =
      source != c.sources.end() && source->second.file.rfind("--set", 0) == 0;
  return c.model.type == config::ModelType::kTransformerXL &&
      c.model.transformer_xl.mem_len == 0 && !asked;
}

Span eval_span(const config::Config& c, bool validation) {
  Span span;
  switch (c.model.type) {
    case config::ModelType::kTransformerXL: {
      const config::TransformerXLConfig& x = c.model.transformer_xl;
      const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
      const int64_t kept_span = x.mem_len + c.train.tgt_len - tgt_len;
      span.ext_len = x.ext_len;
      if (validation) {
        span.mem_len = kept_span;
        span.clamp_len = x.clamp_len;
        span.same_length = x.same_length;
      } else if (trained_without_memory(c)) {
        span.mem_len = kept_span;
        span.clamp_len = c.eval.clamp_len.value_or(x.clamp_len);
        span.same_length = kept_span > 0 && x.same_length;
      } else {
        span.mem_len = c.eval.mem_len.value_or(kept_span);
        span.clamp_len = c.eval.clamp_len.value_or(x.clamp_len);
        span.same_length = c.eval.same_length.value_or(x.same_length);
      }
      break;
    }
    case config::ModelType::kXLNet: {
      // Evaluation batches have the training shapes, so the memory stays the model's unless
      // the eval section says otherwise.
      const config::XLNetConfig& x = c.model.xlnet;
      span.mem_len =
          validation ? x.mem_len : c.eval.mem_len.value_or(x.mem_len);
      span.clamp_len =
          validation ? x.clamp_len : c.eval.clamp_len.value_or(x.clamp_len);
      break;
    }
    case config::ModelType::kCharTransformer:
      span.mem_len = 0;
      break;
  }
  return span;
}

} // namespace xl::models
