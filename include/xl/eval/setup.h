// The evaluation a config asks for over a split: which batch source, which attention lengths,
// how many batches.
#pragma once

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
