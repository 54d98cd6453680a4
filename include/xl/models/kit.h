// The kit every model family builds from, below the families: the option pieces that come from
// the keys every family has (model.*), and the layer stack's contracts (its name, activation
// recomputation, generation's decoding cache). The front door above the registry is
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
#include "xl/nn/attention_core.h"
#include "xl/nn/init.h"
#include "xl/nn/recompute.h"

namespace xl::models {

/// The attention every family's layers share: model.d_model, n_head, d_head, dropout, dropatt,
/// pre_lnorm, layer_norm_eps.
nn::AttentionOptions attention_options(const config::ModelConfig& model);

/// model.init, init_range and init_std.
nn::InitOptions init_options(const config::ModelConfig& model);

/// A ConfigError unless model.d_model is even, as the sinusoid position embedding needs (a
/// family's validation calls it).
void require_even_d_model(const config::Config& config);

/// The name of a model's layer stack: train.lr_layer_decay finds layer i by its parameters'
/// names, layers.<i>.*, and takes none without it.
inline constexpr const char* kLayerStack = "layers";

/// Registers `model`'s layer stack under kLayerStack: `n_layer` layers, make(i) the i-th.
template <class Make>
torch::nn::ModuleList register_layer_stack(torch::nn::Module& model, int64_t n_layer, Make make) {
  auto layers = model.register_module(kLayerStack, torch::nn::ModuleList());
  for (int64_t i = 0; i < n_layer; ++i) {
    layers->push_back(make(i));
  }
  return layers;
}

/// layer(inputs), through activation recomputation (nn::recompute) when `recompute`: the
/// model's train.activation_checkpointing, which each family's layers honour through this.
std::vector<torch::Tensor> run_layer(
    bool recompute,
    const nn::Block& layer,
    const std::vector<torch::Tensor>& inputs);

/// A model's graphs (LanguageModelImpl::use_graphs): `graphs` for `replay`, or null with the
/// reason returned ("" for nullopt). Activation checkpointing (`recompute`) recomputes each
/// layer with the random state it sets on the host, which a graph cannot replay.
std::string graphs_for(
    std::optional<runtime::GraphReplay> replay,
    bool recompute,
    std::unique_ptr<runtime::GraphCache>& graphs);

/// Generation's decoding cache (LanguageModelImpl::continues_cache) for a forward of `args`:
/// args.cache when args asks for the next token (null otherwise), sized to `n_layer` layers,
/// and the positions it holds for a batch of `batch` streams (0: none yet, or another batch's).
struct DecodingCache {
  ProjectionCache* cache = nullptr;
  int64_t past = 0;

  DecodingCache(const ForwardArgs& args, int64_t n_layer, int64_t batch);
  /// Layer `l`'s keys and values (null without a cache).
  nn::AttentionCache* layer(int64_t l) const;
};

} // namespace xl::models
