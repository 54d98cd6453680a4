// The kit every model family builds from, below the families: the option pieces that come from
// the keys every family has (model.*), the layer stack every family runs its layers through
// (models/layer_stack.h), and generation's decoding cache. The front door above the registry is
// models/factory.h.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xl/config/schema.h"
#include "xl/models/language_model.h"
#include "xl/models/layer_stack.h"
#include "xl/nn/attention_core.h"
#include "xl/nn/init.h"

namespace xl::models {

/// The attention every family's layers share: model.d_model, n_head, d_head, dropout, dropatt,
/// pre_lnorm, layer_norm_eps.
nn::AttentionOptions attention_options(const config::ModelConfig& model);

/// model.init, init_range and init_std.
nn::InitOptions init_options(const config::ModelConfig& model);

/// model.n_layer layers of `layer`, drawn as init_options(model) says.
StackShape stack_shape(const config::ModelConfig& model, const nn::DecoderLayerOptions& layer);

/// A ConfigError unless model.d_model is even, as the sinusoid position embedding needs (a
/// family's validation calls it).
void require_even_d_model(const config::Config& config);

/// Generation's decoding cache (LanguageModelImpl::continues_cache) for a forward of `args`:
/// args.cache when args asks for the next token (null otherwise), sized to `n_layer` layers,
/// and the positions it holds for a batch of `batch` streams (0: none yet, or another batch's).
struct DecodingCache {
  ProjectionCache* cache = nullptr;
  int64_t past = 0;

  DecodingCache(const ForwardArgs& args, int64_t n_layer, int64_t batch);
  /// Layer `l`'s keys and values (null without a cache).
  nn::AttentionCache* layer(int64_t l) const;
  /// That `len` new positions after the `past` held fit a model of `n_ctx` positions (`model`
  /// names it in the message).
  void check_fits(int64_t len, int64_t n_ctx, const char* model) const;
  /// The causal mask of `len` new positions after the `past` held.
  torch::Tensor causal_mask(int64_t len, const torch::Device& device) const;
  /// A layer's memory argument for the `past` positions held: their keys and values come from
  /// the cache, and attention reads only their number from these rows (a view of `h`'s first
  /// row, no copy); undefined when none are held.
  torch::Tensor stand_in(const torch::Tensor& h) const;
};

} // namespace xl::models
