// The character transformer family (Al-Rfou et al.): how a config becomes
// CharTransformerOptions, and its descriptor (no memory, the byte corpora it reads, its memory
// formula, generation within its position tables; Hugging Face has no such model) for the
// registry.
#pragma once

#include "xl/config/schema.h"
#include "xl/models/char_transformer/model.h"
#include "xl/models/family.h"

namespace xl::models {

/// Character-transformer options for `config` (its loss schedule runs over train.max_step) over a
/// vocabulary of `n_token`.
CharTransformerOptions char_transformer_options(const config::Config& config, int64_t n_token);

/// The descriptor.
ModelFamily char_transformer_family();

} // namespace xl::models
