// The mini XLNet family: how a config becomes XLNetOptions, and its descriptor (the spans, the
// SentencePiece data it reads, its memory formula, Hugging Face names; no generation) for the
// registry.
#pragma once

#include "xl/config/schema.h"
#include "xl/models/family.h"
#include "xl/models/xlnet/model.h"

namespace xl::models {

/// XLNet options for `model` over a vocabulary of `n_token`.
XLNetOptions xlnet_options(const config::ModelConfig& model, int64_t n_token);

/// The descriptor. Evaluation batches have the training shapes, so the evaluation's memory and
/// clamp_len stay the model's unless the eval section says otherwise (validation: always).
ModelFamily xlnet_family();

} // namespace xl::models
