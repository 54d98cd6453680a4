#include "xl/infer/classifier.h"

#include <fmt/format.h>

#include "xl/util/error.h"

namespace xl::infer {

namespace {

const TrainedRun& classifier_run(const TrainedRun& run, const std::string& scorer) {
  if (!run.classifier()) {
    throw UserError(fmt::format(
        "{} is a language model, not a classifier: {} scores texts with it",
        run.paths().dir.string(),
        scorer));
  }
  return run;
}

} // namespace

ExampleClassifier::ExampleClassifier(const TrainedRun& run, const std::string& scorer)
    : run_(classifier_run(run, scorer)), evaluator_(run.model(), options()) {}

eval::EvalOptions ExampleClassifier::options() {
  eval::EvalOptions o;
  o.device = run_.device();
  o.bf16 = run_.config().train.bf16;
  // Each batch row's probabilities, at its example's place (the batch's target_index).
  o.on_output = [this](const sources::Batch& batch, const models::ModelOutput& out) {
    const auto probs = torch::softmax(out.logits.to(torch::kCPU, torch::kDouble), 1);
    const auto rows = batch.target_index[0].to(torch::kLong);
    if (probs_.size(1) != probs.size(1)) {
      probs_ = torch::zeros({probs_.size(0), probs.size(1)}, torch::kDouble);
    }
    probs_.index_copy_(0, rows, probs);
  };
  return o;
}

std::optional<torch::Tensor> ExampleClassifier::classify(
    const std::vector<formats::LabelledText>& examples,
    const std::string& name,
    const std::function<bool()>& stop) {
  probs_ = torch::zeros({static_cast<int64_t>(examples.size()), 0}, torch::kDouble);
  const auto source = run_.data().example_batches(examples, name);
  const auto lock = run_.graph_lock();
  while (auto batch = source->next()) {
    if (stop && stop()) {
      return std::nullopt;
    }
    evaluator_.consume(*batch, false);
  }
  return probs_.contiguous();
}

} // namespace xl::infer
