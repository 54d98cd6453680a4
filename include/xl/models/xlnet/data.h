// The data XLNet reads: a SentencePiece model and either encoded raw text (pretraining:
// permutation records) or labelled texts (classification, model.xlnet.n_class > 0); or random
// pieces, sentences and reviews of the same shapes for benchmarks.
#pragma once

#include <memory>

#include "xl/config/schema.h"
#include "xl/sources/dataset.h"

namespace xl::models {

/// data.dir's spiece.model and <split>.pieces or <split>.tsv; missing or mismatched files are
/// UserErrors.
std::unique_ptr<sources::Dataset> open_xlnet_dataset(
    const config::Config& config,
    std::shared_ptr<const formats::Tokenizer> tokenizer);

/// `size` ordinary pieces (ids above XLNet's special ones, below `n_token`) cut into sentences
/// of 8 to 31, and reviews of random classes.
std::unique_ptr<sources::Dataset> random_xlnet_dataset(
    const config::Config& config,
    int64_t n_token,
    int64_t size);

} // namespace xl::models
