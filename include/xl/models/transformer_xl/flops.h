// Model FLOPs of a Transformer-XL training step or evaluation segment, per input token: the
// matrix products the model's math needs, counted once (2 FLOPs per multiply-add), backward as
// twice the forward. Work an implementation adds (re-projecting queries of the memory,
// recomputation under activation checkpointing) is not counted. The formula is in docs/benchmarks.md ("Model
// FLOPs").
#pragma once

#include <vector>

#include "xl/config/schema.h"

namespace xl::models {

/// FLOPs per input token of a training step of `config`'s Transformer-XL with `n_token` words,
/// when a fraction `bin_share[i]` of the targets falls in adaptive-softmax bin i (one entry per
/// bin, summing to 1).
double training_flops_per_token(
    const config::Config& config,
    int64_t n_token,
    const std::vector<double>& bin_share);

/// FLOPs per scored token of a memory-mode evaluation segment of `tgt_len` new tokens after
/// `mem_len` of memory, forward only; `projections_kept`: the memory's keys, values and
/// positions come from the previous segment (models::ProjectionCache) instead of being
/// projected again.
double evaluation_flops_per_token(
    const config::Config& config,
    int64_t n_token,
    const std::vector<double>& bin_share,
    int64_t tgt_len,
    int64_t mem_len,
    bool projections_kept);

/// The share of uniformly random targets in each adaptive-softmax bin (xl-bench's data).
std::vector<double> uniform_bin_share(const config::Config& config, int64_t n_token);

} // namespace xl::models
