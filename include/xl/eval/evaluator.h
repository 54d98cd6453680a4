// Evaluation: one loop over a batch source, whatever the model family and whatever the source
// (ordered segments with memory, sliding windows without). Every loss term is summed exactly,
// sums and counts apart, so the result does not depend on how the data was cut into batches.
#pragma once

#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "xl/eval/eval_scope.h"
#include "xl/models/language_model.h"
#include "xl/runtime/autocast.h"
#include "xl/sources/batch_source.h"
#include "xl/sources/unigram_baseline.h"

namespace xl::eval {

struct EvalOptions {
  /// attention lengths for this evaluation
  models::Span span;
  /// stop after this many batches (unset: the whole pass)
  std::optional<int64_t> max_batches;
  torch::Device device = torch::kCPU;
  bool bf16 = false;
  /// asked between batches: true stops the evaluation there (a training run's stop signal)
  std::function<bool()> stop;
  /// a progress line (done/total batches, tok/s, elapsed, ETA) at least this often, in
  /// seconds; 0: none
  double progress_seconds = 0.0;
  /// what the progress line calls a batch ("valid batch", "test segment")
  std::string progress_unit = "batch";
  /// the unigram guess of the data (Dataset::unigram_baseline), scored on the same targets
  /// into EvalResult::baseline; null: none
  const sources::UnigramBaseline* unigram = nullptr;
  /// keep each layer's key and value projections of the memory between batches that continue
  /// their streams (models::ProjectionCache): the same log-probs, fewer products; false
  /// recomputes them every batch (benchmarks and tests compare the two)
  bool cache_projections = true;
  /// ask the model for the log-probability of each target (ModelOutput::log_probs)
  bool log_probs = false;
  /// when set, receives each batch (on the CPU) with what the model made of it, once scored
  std::function<void(const sources::Batch&, const models::ModelOutput&)> on_output;
};

struct EvalResult {
  /// every term of the model's output; terms[0] is the headline
  std::vector<models::TermTotal> terms;
  /// the source's label for approximate scores ("@stride=8"), or ""
  std::string qualifier;
  int64_t batches = 0;
  double seconds = 0.0;
  /// options.stop ended it before the pass was over
  bool stopped = false;
  /// the batches of a whole pass
  int64_t pass_batches = 0;
  /// options.max_batches or a stop cut the pass short: the scores are of a part of the split
  bool partial = false;
  /// with options.unigram: its scores of the targets scored (targets 0 without)
  sources::BaselineTotals baseline;

  const models::TermTotal& headline() const;
  double loss() const {
    return headline().mean();
  }
  /// the targets the headline term counted
  int64_t tokens() const {
    return headline().count;
  }
  double tokens_per_second() const;
};

/// Scores batches one at a time with the model in eval mode (restored when the evaluator goes),
/// without gradients, carrying the memory, and the projections of its rows, from batch to batch
/// when asked to. Under bf16 it keeps a bf16 copy of the weights for its life: the weights must
/// not change while it lives.
class Evaluator {
 public:
  Evaluator(models::LanguageModelImpl& model, EvalOptions options);
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  /// Scores `batch` (on the CPU; moved to the device here); `continues_streams`: it continues
  /// the rows of the previous batch, so the memory carries over.
  void consume(const sources::Batch& batch, bool continues_streams);
  int64_t batches() const {
    return batches_;
  }
  /// The totals so far (reads the device once).
  EvalResult result() const;

 private:
  models::LanguageModelImpl& model_;
  EvalOptions options_;
  EvalScope eval_scope_;
  // bf16: the weights are cast once for the whole evaluation, not once per batch.
  runtime::KeptWeightCasts kept_casts_;
  nn::Memory mems_;
  models::ProjectionCache cache_;
  models::TermAccumulator totals_;
  int64_t batches_ = 0;
  std::chrono::steady_clock::time_point start_;
};

/// One pass of `source` (or its first options.max_batches batches); `observe` sees each batch
/// before it is scored.
EvalResult evaluate(
    models::LanguageModelImpl& model,
    sources::BatchSource& source,
    const EvalOptions& options,
    const std::function<void(const sources::Batch&)>& observe = {});

} // namespace xl::eval
