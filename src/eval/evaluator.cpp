#include "xl/eval/evaluator.h"

#include <algorithm>
#include <utility>

#include "xl/models/layer_stack.h"
#include "xl/run/progress.h"
#include "xl/runtime/autocast.h"
#include "xl/runtime/device.h"
#include "xl/util/log.h"

namespace xl::eval {

const models::TermTotal& EvalResult::headline() const {
  TORCH_CHECK(!terms.empty(), "an evaluation without loss terms");
  return terms.front();
}

double EvalResult::tokens_per_second() const {
  return seconds > 0 ? static_cast<double>(tokens()) / seconds : 0.0;
}

Evaluator::Evaluator(models::LanguageModelImpl& model, EvalOptions options)
    : model_(model),
      options_(std::move(options)),
      eval_scope_(model),
      kept_casts_(options_.bf16),
      start_(std::chrono::steady_clock::now()) {}

void Evaluator::consume(const sources::Batch& batch, bool continues_streams) {
  // Inference mode: no autograd records, no version counters; what it makes (the memory, the
  // projection cache) is read by the evaluation alone.
  const c10::InferenceMode inference;
  runtime::AutocastGuard autocast(options_.device, options_.bf16);
  models::ForwardArgs args;
  args.span = options_.span;
  args.log_probs = options_.log_probs;
  if (!continues_streams) {
    cache_ = {}; // its rows belong to the memory this batch does not read
  }
  // Windows read no row again: nothing to keep for them. A model running graphs reads no
  // cache: its replays would leave one behind.
  args.cache = options_.cache_projections && continues_streams && !models::uses_graphs(model_)
      ? &cache_
      : nullptr;
  auto out =
      model_.forward(batch.to(options_.device), continues_streams ? mems_ : nn::Memory{}, args);
  totals_.add(out.terms);
  if (continues_streams) {
    mems_ = std::move(out.mems);
  }
  if (options_.on_output) {
    options_.on_output(batch.on_host(), out);
  }
  ++batches_;
}

EvalResult Evaluator::result() const {
  EvalResult result;
  result.terms = totals_.totals();
  result.batches = batches_;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  return result;
}

EvalResult evaluate(
    models::LanguageModelImpl& model,
    sources::BatchSource& source,
    const EvalOptions& options,
    const std::function<void(const sources::Batch&)>& observe) {
  Evaluator evaluator(model, options);
  const int64_t pass = source.batches_per_pass();
  run::Progress progress(options.max_batches ? std::min(*options.max_batches, pass) : pass);
  bool stopped = false;
  sources::BaselineTotals baseline;
  while (!options.max_batches || evaluator.batches() < *options.max_batches) {
    if (options.stop && options.stop()) {
      stopped = true;
      break;
    }
    auto batch = source.next();
    if (!batch) {
      break;
    }
    if (observe) {
      observe(*batch);
    }
    if (options.unigram != nullptr) {
      baseline.add(*batch, *options.unigram);
    }
    if (batch->labels.defined() && !batch->targets.defined()) {
      progress.count_as("ex"); // a classifier's batches count examples
    }
    evaluator.consume(*batch, source.continues_streams());
    progress.update(evaluator.batches(), batch->n_targets);
    if (options.progress_seconds > 0 && progress.due(options.progress_seconds)) {
      logger().info("{}", progress.line(options.progress_unit));
    }
  }
  auto result = evaluator.result();
  result.qualifier = source.metric_qualifier();
  result.stopped = stopped;
  result.pass_batches = pass;
  result.partial = stopped || (options.max_batches && *options.max_batches < pass);
  result.baseline = baseline;
  return result;
}

} // namespace xl::eval
