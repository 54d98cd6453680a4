#include "xl/models/kit.h"

#include <fmt/format.h>

#include "xl/config/config.h"
#include "xl/nn/masks.h"

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

StackShape stack_shape(const config::ModelConfig& model, const nn::DecoderLayerOptions& layer) {
  return StackShape(model.n_layer, layer).init(init_options(model));
}

DecodingCache::DecodingCache(const ForwardArgs& args, int64_t n_layer, int64_t batch)
    : cache(args.next_token ? args.cache : nullptr) {
  if (cache == nullptr) {
    return;
  }
  cache->layers.resize(static_cast<size_t>(n_layer));
  const auto& held = cache->layers.front().k; // [B, H, past, Dh]
  past = held.defined() && held.size(0) == batch ? held.size(2) : 0;
}

nn::AttentionCache* DecodingCache::layer(int64_t l) const {
  return cache != nullptr ? &cache->layers[static_cast<size_t>(l)] : nullptr;
}

void DecodingCache::check_fits(int64_t len, int64_t n_ctx, const char* model) const {
  TORCH_CHECK(
      past + len <= n_ctx,
      model,
      " reads at most n_ctx = ",
      n_ctx,
      " positions; got ",
      len,
      " after ",
      past,
      " cached");
}

torch::Tensor DecodingCache::causal_mask(int64_t len, const torch::Device& device) const {
  return nn::causal_mask(len, past, false, 0, device);
}

torch::Tensor DecodingCache::stand_in(const torch::Tensor& h) const {
  return past > 0 ? h.narrow(0, 0, 1).expand({past, h.size(1), h.size(2)}) : torch::Tensor();
}

} // namespace xl::models
