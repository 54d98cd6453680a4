// The evaluation a config asks for over a split: which batch source, which attention lengths,
// how many batches.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "xl/config/schema.h"
#include "xl/eval/evaluator.h"
#include "xl/sources/batch_source.h"
#include "xl/sources/dataset.h"

namespace xl::eval {

struct EvalSetup {
  std::unique_ptr<sources::BatchSource> source;
  EvalOptions options;
  /// the settings in words, for logs and metrics.jsonl
  std::string setting;
  /// the same as values, for metrics.jsonl ("eval": xl-compare keeps evaluations of other
  /// settings apart): memory mode the tgt_len, batch, mem_len, clamp_len and same_length;
  /// vanilla mode the window and the stride
  nlohmann::json values;
};

/// The options of evaluating `batches` (from sources::Dataset::eval_batches): the attention span
/// (eval_span; no memory when the batches do not continue streams), the batch limit of a
/// `validation` (train.max_eval_steps), and the setting in words.
EvalSetup eval_setup(
    const config::Config& config,
    sources::EvalBatches batches,
    bool validation,
    const torch::Device& device);

} // namespace xl::eval
