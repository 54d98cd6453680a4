// The training batch source a config asks for (train.sampling).
#pragma once

#include <memory>

#include "xl/config/schema.h"
#include "xl/formats/tokens.h"
#include "xl/sources/batch_source.h"

namespace xl::sources {

/// Ordered segments of train.tgt_len tokens over train.batch_size streams (each input preceded
/// by `ext_len` tokens of context), or random windows of train.tgt_len tokens seeded from
/// train.seed. `tokens` must outlive the source.
std::unique_ptr<BatchSource> make_train_source(
    const config::TrainConfig& train,
    const formats::Tokens& tokens,
    int64_t ext_len);

} // namespace xl::sources
