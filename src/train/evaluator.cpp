#include "xl/train/evaluator.h"

#include <chrono>
#include <cmath>

#include "xl/data/lm_iterator.h"
#include "xl/train/autocast.h"

namespace xl::train {

namespace {

// Puts the model in eval mode with other lengths, and back when done.
class EvalScope {
 public:
  EvalScope(models::LanguageModelImpl& model, const models::Lengths& lengths)
      : model_(model),
        lengths_(model.lengths()),
        training_(model.is_training()) {
    model_.set_lengths(lengths);
    model_.eval();
  }
  ~EvalScope() {
    model_.set_lengths(lengths_);
    model_.train(training_);
  }
  EvalScope(const EvalScope&) = delete;
  EvalScope& operator=(const EvalScope&) = delete;

 private:
  models::LanguageModelImpl& model_;
  models::Lengths lengths_;
  bool training_;
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace

Metric metric(data::VocabKind kind, double loss) {
  if (kind == data::VocabKind::kWord) {
    return {"ppl", std::exp(loss)};
  }
  return {"bpc", loss / std::log(2.0)};
}

EvalSettings eval_settings(const config::Config& c, bool training) {
  EvalSettings s;
  s.batch_size = c.eval.batch_size;
  s.tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
  const int64_t kept_span = c.model.mem_len + c.train.tgt_len - s.tgt_len;
  s.lengths.ext_len = c.model.ext_len;
  if (training) {
    s.lengths.mem_len = kept_span;
    s.lengths.clamp_len = c.model.clamp_len;
    s.lengths.same_length = c.model.same_length;
    s.max_steps = c.train.max_eval_steps;
  } else {
    s.lengths.mem_len = c.eval.mem_len.value_or(kept_span);
    s.lengths.clamp_len = c.eval.clamp_len.value_or(c.model.clamp_len);
    s.lengths.same_length = c.eval.same_length.value_or(c.model.same_length);
  }
  return s;
}

EvalResult evaluate(
    models::LanguageModelImpl& model,
    const data::TokenFile& tokens,
    const EvalSettings& settings,
    const torch::Device& device,
    bool bf16) {
  EvalScope scope(model, settings.lengths);
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(device, bf16);
  const auto start = std::chrono::steady_clock::now();
  data::LMOrderedIterator it(
      tokens, settings.batch_size, settings.tgt_len, settings.lengths.ext_len);
  EvalResult result;
  torch::Tensor nll =
      torch::zeros({}, torch::dtype(torch::kDouble).device(device));
  nn::Memory mems;
  for (int64_t step = 0; it.has_next(); ++step) {
    if (settings.max_steps && step >= *settings.max_steps) {
      break;
    }
    const auto segment = it.next();
    auto out = model.forward(
        segment.input.to(device), segment.target.to(device), mems);
    nll += out.nll_sum.to(torch::kDouble);
    result.count += out.count;
    mems = std::move(out.mems);
  }
  result.nll_sum = nll.item<double>();
  result.seconds = seconds_since(start);
  return result;
}

EvalResult evaluate_vanilla(
    models::LanguageModelImpl& model,
    const data::TokenFile& tokens,
    int64_t window,
    int64_t batch_size,
    std::optional<int64_t> max_batches,
    const torch::Device& device,
    bool bf16) {
  models::Lengths lengths = model.lengths();
  lengths.mem_len = 0;
  lengths.ext_len = 0;
  lengths.same_length = false;
  EvalScope scope(model, lengths);
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(device, bf16);
  const auto start = std::chrono::steady_clock::now();
  EvalResult result;
  torch::Tensor nll =
      torch::zeros({}, torch::dtype(torch::kDouble).device(device));
  // Position t (window - 1 <= t < size - 1) is scored from tokens [t - window +
  // 1, t].
  const int64_t first = window - 1;
  const int64_t last = tokens.size() - 1; // exclusive
  int64_t batches = 0;
  for (int64_t t = first; t < last; t += batch_size, ++batches) {
    if (max_batches && batches >= *max_batches) {
      break;
    }
    const int64_t n = std::min(batch_size, last - t);
    // One read spans every window of this batch plus the targets.
    const auto span = tokens.slice(t - window + 1, window + n);
    const auto input = span.unfold(0, window, 1).narrow(0, 0, n).t(); // [W, n]
    const auto target = span.narrow(0, window, n).unsqueeze(0);       // [1, n]
    const auto out =
        model.forward(input.contiguous().to(device), target.to(device), {});
    nll += out.nll_sum.to(torch::kDouble);
    result.count += out.count;
  }
  result.nll_sum = nll.item<double>();
  result.seconds = seconds_since(start);
  return result;
}

} // namespace xl::train
