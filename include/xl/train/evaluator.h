// Evaluation of a language model on a token file, with exact corpus-level
// numbers: the summed negative log-likelihood and the token count travel
// separately, so the loss is exactly sum / count however the data is split into
// segments and batches.
#pragma once

#include <torch/torch.h>

#include <optional>
#include <string>

#include "xl/config/schema.h"
#include "xl/data/token_file.h"
#include "xl/data/vocab.h"
#include "xl/models/language_model.h"

namespace xl::train {

struct EvalResult {
  double nll_sum = 0.0;
  int64_t count = 0;
  double seconds = 0.0;
  double loss() const {
    return count > 0 ? nll_sum / static_cast<double>(count) : 0.0;
  }
  double tokens_per_second() const {
    return seconds > 0 ? static_cast<double>(count) / seconds : 0.0;
  }
};

/// Perplexity for word-level data, bits per character for byte-level data.
struct Metric {
  std::string name; // "ppl" or "bpc"
  double value = 0.0;
};
Metric metric(data::VocabKind kind, double loss);

struct EvalSettings {
  int64_t batch_size = 10;
  int64_t tgt_len = 128;
  models::Lengths lengths;
  /// segments to score (memory mode) or batches of windows (vanilla mode);
  /// unset: all
  std::optional<int64_t> max_steps;
};

/// Settings from the config. `training`: the periodic validation during
/// training, which keeps the training attention span (mem_len + tgt_len - eval
/// tgt_len, the kimiyoung/NVIDIA rule) and the model's clamp_len and
/// same_length; otherwise the eval section, with its nulls resolved the same
/// way.
EvalSettings eval_settings(const config::Config& config, bool training);

/// Memory mode: consecutive segments of `tgt_len` tokens over batch_size
/// streams, each attending to its memory of `lengths.mem_len` states. Restores
/// the model's lengths and training mode afterwards.
EvalResult evaluate(
    models::LanguageModelImpl& model,
    const data::TokenFile& tokens,
    const EvalSettings& settings,
    const torch::Device& device,
    bool bf16 = false);

/// Vanilla mode (the paper's baseline evaluation): for every position t >=
/// window, a window of the `window` tokens up to t predicts token t + 1,
/// scoring only that last position; windows are batched `batch_size` at a time,
/// without memory.
EvalResult evaluate_vanilla(
    models::LanguageModelImpl& model,
    const data::TokenFile& tokens,
    int64_t window,
    int64_t batch_size,
    std::optional<int64_t> max_batches,
    const torch::Device& device,
    bool bf16 = false);

} // namespace xl::train
