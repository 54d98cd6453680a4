// Builds models from the validated config: the one place where config sections
// become module Options.
#pragma once

#include "xl/config/schema.h"
#include "xl/models/language_model.h"
#include "xl/models/transformer_xl.h"

namespace xl::models {

/// Transformer-XL options for `model` over a vocabulary of `n_token`. A config
/// that does not fit the vocabulary (a cutoff >= n_token) is a ConfigError.
TransformerXLOptions transformer_xl_options(
    const config::ModelConfig& model,
    int64_t n_token);

/// The model family `model.type` names, freshly initialised from the torch
/// random state.
LanguageModel build_model(const config::ModelConfig& model, int64_t n_token);

} // namespace xl::models
