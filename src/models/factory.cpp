#include "xl/models/factory.h"

#include <fmt/format.h>

#include "xl/config/config.h"
#include "xl/models/registry.h"

namespace xl::models {

nn::AttentionOptions attention_options(const config::ModelConfig& m) {
  return nn::AttentionOptions(m.d_model, m.n_head, m.d_head)
      .dropout(m.dropout)
      .dropatt(m.dropatt)
      .pre_lnorm(m.pre_lnorm)
      .layer_norm_eps(m.layer_norm_eps);
}

void require_even_d_model(const config::Config& c) {
  if (c.model.d_model % 2 != 0) {
    config::fail_rule(
        c,
        "model.d_model",
        fmt::format(
            "the sinusoidal position embedding needs an even d_model, found {}", c.model.d_model));
  }
}

nn::InitOptions init_options(const config::ModelConfig& m) {
  return nn::InitOptions()
      .uniform(m.init == config::Init::kUniform)
      .range(m.init_range)
      .normal_std(m.init_std);
}

LanguageModel build_model(const config::Config& config, int64_t n_token) {
  return model_family(config).build(config, n_token);
}

Span eval_span(const config::Config& config, bool validation) {
  const ModelFamily& family = model_family(config);
  if (!family.config.carries_memory) {
    Span none;
    none.mem_len = 0;
    return none;
  }
  return family.eval_span(config, validation);
}

std::string eval_span_note(const config::Config& config) {
  const ModelFamily& family = model_family(config);
  return family.eval_span_note ? family.eval_span_note(config) : "";
}

std::unique_ptr<sources::Dataset> open_dataset(const config::Config& config) {
  sources::check_data_dir(config);
  return model_family(config).open_dataset(config);
}

std::unique_ptr<sources::Dataset> random_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size) {
  return model_family(config).random_dataset(config, n_token, size);
}

} // namespace xl::models
