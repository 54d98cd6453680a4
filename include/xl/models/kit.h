// The kit every model family builds from, below the families: the option pieces that come from
// the keys every family has (model.*). The front door above the registry is models/factory.h.
#pragma once

#include "xl/config/schema.h"
#include "xl/nn/attention_core.h"
#include "xl/nn/init.h"

namespace xl::models {

/// The attention every family's layers share: model.d_model, n_head, d_head, dropout, dropatt,
/// pre_lnorm, layer_norm_eps.
nn::AttentionOptions attention_options(const config::ModelConfig& model);

/// model.init, init_range and init_std.
nn::InitOptions init_options(const config::ModelConfig& model);

/// A ConfigError unless model.d_model is even, as the sinusoid position embedding needs (a
/// family's validation calls it).
void require_even_d_model(const config::Config& config);

} // namespace xl::models
