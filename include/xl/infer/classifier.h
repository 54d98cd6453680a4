// A classifier run's class probabilities for examples, a part at a time, and the totals of every
// part so far (accuracy and loss against the examples' labels): what xl-predict and the
// library's Model::classify run. Threads may classify with one TrainedRun at once, each with a
// classifier of its own.
#pragma once

#include <torch/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "xl/eval/evaluator.h"
#include "xl/formats/labelled_file.h"
#include "xl/infer/trained_run.h"

namespace xl::infer {

class ExampleClassifier {
 public:
  /// Over `run`, a classifier (a UserError for a language model, whose `scorer` call scores
  /// texts instead).
  ExampleClassifier(const TrainedRun& run, const std::string& scorer);

  /// [E, C] (CPU, double) each example's probabilities, in the order given (`name` says what
  /// they are, for messages), in batches of the run's eval.batch_size; nothing when `stop` asked
  /// to stop between two batches.
  std::optional<torch::Tensor> classify(
      const std::vector<formats::LabelledText>& examples,
      const std::string& name,
      const std::function<bool()>& stop = {});
  /// The totals of the batches scored.
  eval::EvalResult result() const {
    return evaluator_.result();
  }

 private:
  eval::EvalOptions options();

  const TrainedRun& run_;
  torch::Tensor probs_; // of the examples at hand
  eval::Evaluator evaluator_;
};

} // namespace xl::infer
