// What both of XLNet's streams read at every layer for one batch (nn::TwoStreamTerms): the
// content and query streams' positions, masks and segment terms, and the terms as the layer
// stack's per-call tensors.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "xl/models/layer_stack.h"
#include "xl/nn/two_stream_attention.h"
#include "xl/sources/batch.h"

namespace xl::models {

/// The streams' queries and masks for `batch` (tokens [L, B], padding, perm_mask, segment_ids,
/// target_mapping) with `mlen` memory positions, into `terms`: the content stream's, and the
/// query stream's with its validity when the batch has a target_mapping.
void add_stream_queries(const sources::Batch& batch, int64_t mlen, nn::TwoStreamTerms& terms);

/// The tensors of `terms` that every layer reads alike (the biases, which are per layer, aside),
/// by name, the undefined ones too: StackInput::tensors.
CallTensors call_tensors(const nn::TwoStreamTerms& terms);

/// call_tensors() back into terms (the biases undefined).
nn::TwoStreamTerms terms_of(const CallTensors& tensors);

} // namespace xl::models
