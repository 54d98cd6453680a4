// Losses as ratios (Marian's RationalLoss): a model returns each loss term as a sum and a count,
// so that sums and counts add exactly across chunks, batches and devices, and the mean is taken
// once at the end.
#pragma once

#include <torch/torch.h>

#include <string>
#include <vector>

namespace xl::models {

/// How a term reads as a metric.
enum class TermKind {
  /// nats per target token: perplexity for word or piece data, bits per character for bytes
  kTokenNll,
  /// nats per example (e.g. classification cross-entropy)
  kNll,
  /// sum = correct predictions: accuracy
  kAccuracy,
};

/// One term of a model's output.
struct LossTerm {
  /// "lm", "aux/layer12/t+1", "cls", "cls_correct"; metrics.jsonl logs the term under it
  std::string name;
  /// float32 scalar on the model's device
  torch::Tensor sum;
  /// what `sum` adds over (targets, examples), known on the host
  int64_t count = 0;
  /// share of the training objective sum(weight * sum / count); 0: reported, not trained
  double weight = 1.0;
  TermKind kind = TermKind::kTokenNll;
};

/// A term's exact total over a step, a logging window or an evaluation, on the host.
struct TermTotal {
  std::string name;
  TermKind kind = TermKind::kTokenNll;
  double weight = 1.0;
  double sum = 0.0;
  int64_t count = 0;
  /// sum / count (0 when nothing was counted)
  double mean() const {
    return count > 0 ? sum / static_cast<double>(count) : 0.0;
  }
};

/// Adds `more` into `totals` term by term; an empty `totals` takes `more`'s terms. Terms must
/// come in the same order with the same names.
void accumulate(std::vector<TermTotal>& totals, const std::vector<TermTotal>& more);

/// Totals of `terms` with host values `sums` (one per term, in order).
std::vector<TermTotal> totals_of(
    const std::vector<LossTerm>& terms,
    const std::vector<double>& sums);

/// Running totals over many batches without waiting for the device: the sums add up in float64
/// on the terms' device, the counts on the host; totals() reads the device once.
class TermAccumulator {
 public:
  void add(const std::vector<LossTerm>& terms);
  std::vector<TermTotal> totals() const;

 private:
  std::vector<TermTotal> meta_;
  torch::Tensor sums_;
};

} // namespace xl::models
