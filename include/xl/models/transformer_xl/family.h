// The Transformer-XL family: how a config becomes TransformerXLOptions, and its descriptor (the
// spans, the word or byte corpora it reads, its memory formula, FLOPs, Hugging Face names and
// generation facts) for the registry.
#pragma once

#include "xl/config/schema.h"
#include "xl/models/family.h"
#include "xl/models/transformer_xl/model.h"

namespace xl::models {

/// Transformer-XL options for `config`'s model over a vocabulary of `n_token` (the learned
/// position tables default to the training span). A config that does not fit the vocabulary (a
/// cutoff >= n_token) is a ConfigError.
TransformerXLOptions transformer_xl_options(const config::Config& config, int64_t n_token);

/// The attention lengths of an evaluation of `config` (`validation`: during training), as the
/// descriptor's eval_span gives them (below).
Span transformer_xl_eval_span(const config::Config& config, bool validation);

/// The descriptor. Evaluation spans: validation keeps the training attention span, memory
/// mem_len + train.tgt_len - eval.tgt_len (the kimiyoung/NVIDIA rule), and the model's clamp_len
/// and same_length; otherwise the eval section decides, its nulls resolved the same way. A model
/// trained without memory (an ablation) is evaluated with the training span unless eval.mem_len
/// is set on the command line: a "no memory" ablation of a config with a long evaluation memory
/// is not evaluated with that memory unless `--set eval.mem_len=N` asks.
ModelFamily transformer_xl_family();

} // namespace xl::models
