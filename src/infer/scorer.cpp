#include "xl/infer/scorer.h"

#include "xl/eval/setup.h"
#include "xl/models/factory.h"
#include "xl/run/checkpoint.h"
#include "xl/util/log.h"

namespace xl::infer {

namespace {

// The in-vocabulary totals, summed where the model runs and read once at the end: a read per
// batch would wait for the device at every batch.
struct InVocabularySums {
  torch::Tensor tokens;
  torch::Tensor nll;
};

// What turns the model's log-probabilities into the listing and the in-vocabulary sums.
std::shared_ptr<InVocabularySums> keep_outputs(
    eval::EvalOptions& options,
    Scored& scored,
    int64_t unk) {
  auto sums = unk >= 0 ? std::make_shared<InVocabularySums>() : nullptr;
  if (!scored.listing && !sums) {
    return sums;
  }
  options.log_probs = true;
  options.on_output = [&scored, sums, unk](
                          const sources::Batch& batch, const models::ModelOutput& out) {
    if (scored.listing) {
      scored.listing->add(batch, out.log_probs.to(torch::kCPU, torch::kFloat));
    }
    if (sums) {
      auto known = batch.targets.ne(unk);
      if (batch.target_mask.defined()) {
        known &= batch.target_mask;
      }
      known = known.to(out.log_probs.device());
      const auto tokens = known.sum();
      const auto nll =
          -torch::where(known, out.log_probs, torch::zeros({}, out.log_probs.options()))
               .sum(torch::kDouble);
      sums->tokens = sums->tokens.defined() ? sums->tokens + tokens : tokens;
      sums->nll = sums->nll.defined() ? sums->nll + nll : nll;
    }
  };
  return sums;
}

// The <unk> of a word vocabulary that maps a user's text to it, or -1.
int64_t unknown_id(const TrainedRun& run, const std::optional<sources::TextReading>& reading) {
  const auto* vocab = run.tokenizer().vocab();
  return reading && vocab != nullptr && vocab->has_unknown_token() ? vocab->index("<unk>") : -1;
}

Scored score_batches(
    const TrainedRun& run,
    sources::EvalBatches batches,
    const std::string& name,
    const ScoreOptions& o,
    const sources::UnigramBaseline* unigram) {
  Scored scored;
  scored.reading = std::move(batches.reading);
  scored.tokens = batches.owned;
  const formats::Tokens* in_order = batches.tokens;
  if (scored.reading && !scored.reading->fitted.empty()) {
    logger().info("{}", scored.reading->fitted);
  }
  auto setup = eval::eval_setup(run.config(), std::move(batches), false, run.device());
  setup.options.max_batches = o.max_batches;
  setup.options.unigram = unigram;
  setup.options.stop = o.stop;
  setup.options.progress_seconds = o.progress_seconds;
  if (o.list_tokens || o.per_token_file) {
    scored.listing = std::make_shared<eval::PerTokenListing>(
        o.per_token_file, in_order, [&tokenizer = run.tokenizer()](int64_t id) {
          return tokenizer.token(id);
        });
  }
  const auto sums = keep_outputs(setup.options, scored, unknown_id(run, scored.reading));
  if (const auto note = models::eval_span_note(run.config()); !note.empty()) {
    logger().info("{}", note);
  }
  logger().info("evaluating on {}: {}", name, setup.setting);
  {
    const auto lock = run.graph_lock();
    scored.result = eval::evaluate(run.model(), *setup.source, setup.options, o.observe);
  }
  if (sums) {
    scored.in_vocabulary = InVocabulary{};
    if (sums->tokens.defined()) {
      scored.in_vocabulary->tokens = sums->tokens.item<int64_t>();
      scored.in_vocabulary->nll = sums->nll.item<double>();
    }
  }
  if (o.per_token_file) {
    const int64_t rows = scored.listing->write(run.config().run.progress_seconds);
    logger().info("listed {} tokens in {}", rows, o.per_token_file->string());
  }
  scored.continued = setup.source->continues_streams();
  scored.setting = std::move(setup.setting);
  scored.values = std::move(setup.values);
  return scored;
}

} // namespace

Scored score_text(const TrainedRun& run, const sources::UserText& text, const ScoreOptions& o) {
  sources::UserText read = text;
  read.options.origins = o.list_tokens || o.per_token_file.has_value();
  return score_batches(run, run.data().text_batches(read, o.scoring), text.name, o, nullptr);
}

Scored score_split(const TrainedRun& run, const std::string& split, const ScoreOptions& o) {
  // A split is data.dir's, encoded with its vocabulary: the checkpoint's, or the data moved on.
  const auto& data = run.config().data;
  sources::check_data_dir(data.dir);
  const auto theirs = formats::Tokenizer::load(std::filesystem::path(data.dir) / data.vocab);
  run::require_same_vocabulary(
      run.checkpoint(), run.vocabulary(), theirs->fingerprint(), theirs->file());
  return score_batches(
      run, run.data().eval_batches(split, false), split, o, run.data().unigram_baseline());
}

} // namespace xl::infer
