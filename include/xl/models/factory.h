// Builds models from the validated config: the one place where config sections become module
// Options, and where each model family is named.
#pragma once

#include "xl/config/schema.h"
#include "xl/models/char_transformer.h"
#include "xl/models/language_model.h"
#include "xl/models/transformer_xl.h"
#include "xl/models/xlnet.h"

namespace xl::models {

/// Transformer-XL options for `config`'s model over a vocabulary of `n_token` (the learned
/// position tables default to the training span). A config that does not fit the vocabulary (a
/// cutoff >= n_token) is a ConfigError.
TransformerXLOptions transformer_xl_options(
    const config::Config& config,
    int64_t n_token);

/// XLNet options for `model` over a vocabulary of `n_token`.
XLNetOptions xlnet_options(const config::ModelConfig& model, int64_t n_token);

/// Character-transformer options for `config` (its loss schedule runs over train.max_step) over a
/// vocabulary of `n_token`.
CharTransformerOptions char_transformer_options(
    const config::Config& config,
    int64_t n_token);

/// The model family `model.type` names, freshly initialised from the torch random state.
LanguageModel build_model(const config::Config& config, int64_t n_token);

/// The attention lengths of training: the model's own (extended context, memory).
Span training_span(const config::ModelConfig& model);

/// The attention lengths of an evaluation. `validation` (during training) keeps the training
/// attention span, memory mem_len + train.tgt_len - eval.tgt_len (the kimiyoung/NVIDIA rule), and
/// the model's clamp_len and same_length; otherwise the eval section decides, its nulls resolved
/// the same way. A Transformer-XL trained without memory (an ablation) is evaluated with the
/// training span unless eval.mem_len is set on the command line (see trained_without_memory).
Span eval_span(const config::Config& config, bool validation);

/// Whether `config` is a Transformer-XL trained without memory whose evaluation ignores the
/// config's eval.mem_len and eval.same_length: a "no memory" ablation of a config with a long
/// evaluation memory is not evaluated with that memory unless `--set eval.mem_len=N` asks.
bool trained_without_memory(const config::Config& config);

} // namespace xl::models
