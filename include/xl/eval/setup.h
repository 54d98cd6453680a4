// The evaluation a config asks for over a split: which batch source, which attention lengths,
// how many batches.
#pragma once

#include <memory>
#include <string>

#include "xl/config/schema.h"
#include "xl/data/batch_source.h"
#include "xl/data/tokens.h"
#include "xl/eval/evaluator.h"

namespace xl::eval {

struct EvalSetup {
  std::unique_ptr<data::BatchSource> source;
  EvalOptions options;
  /// the settings in words, for logs and metrics.jsonl
  std::string setting;
};

/// `validation`: the periodic validation during training (memory mode, the training attention
/// span, train.max_eval_steps). Otherwise the final evaluation of the eval section: memory mode
/// (ordered segments of eval.tgt_len with the evaluation memory) or vanilla mode (sliding windows
/// of train.tgt_len tokens scoring their last eval.stride positions, no memory). `tokens` must
/// outlive the source.
EvalSetup eval_setup(
    const config::Config& config,
    const data::Tokens& tokens,
    bool validation,
    const torch::Device& device);

} // namespace xl::eval
