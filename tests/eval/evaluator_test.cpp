// The evaluator on a model of the tests' own and on a Transformer-XL over a digits corpus: sums
// that do not depend on the batching, memory and cached projections that give what one long
// pass gives, bf16 weights read afresh by each evaluation; and the metric each term reports.
#include "xl/eval/evaluator.h"

#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "train/fake_model.h"
#include "xl/eval/report.h"
#include "xl/models/factory.h"
#include "xl/runtime/autocast.h"
#include "xl/sources/corpus.h"
#include "xl/sources/ordered_segments.h"
#include "xl/sources/windows.h"

namespace xl::eval {
namespace {

using models::TermKind;
using test::DigitsCorpus;
using test::fake_model;

TEST(Evaluator, SumsDoNotDependOnHowTheWindowsAreBatched) {
  const formats::TokenTensor tokens(torch::randint(11, {300}, torch::kLong), "random");
  auto model = fake_model(11, 0.5);
  std::vector<EvalResult> results;
  for (const int64_t batch_size : {3, 7}) {
    sources::SlidingWindows source(tokens, 10, 2, batch_size);
    results.push_back(evaluate(*model, source, {}));
  }
  ASSERT_EQ(results[0].terms.size(), 3u);
  EXPECT_EQ(results[0].tokens(), 290);
  EXPECT_EQ(results[0].qualifier, "@stride=2");
  for (size_t t = 0; t < 3; ++t) {
    EXPECT_NEAR(results[0].terms[t].sum, results[1].terms[t].sum, 1e-3);
    EXPECT_EQ(results[0].terms[t].count, results[1].terms[t].count);
  }
  EXPECT_TRUE(model->is_training()); // the evaluator restored the mode
}

// A Transformer-XL built for the digits corpus, and the corpus's prepared validation split.
struct DigitsModel {
  DigitsCorpus corpus;
  std::filesystem::path vocab_file =
      std::filesystem::path(corpus.config.data.dir) / corpus.config.data.vocab;
  formats::Vocab vocab = formats::Vocab::load(vocab_file);
  sources::Corpus prepared{corpus.config.data, vocab, vocab_file};
  models::LanguageModel model = [this] {
    torch::manual_seed(2);
    return models::build_model(corpus.config, prepared.vocab().size());
  }();
  const formats::TokenFile& tokens = prepared.split("valid");
};

TEST(Evaluator, MemoryEvaluationEqualsOneLongPassWhenTheMemoryHoldsEverything) {
  DigitsModel digits;
  auto& model = digits.model;
  const auto& tokens = digits.tokens;
  sources::OrderedSegments source(tokens, 2, 7);
  EvalOptions options;
  options.span.mem_len = 1000;
  options.max_batches = 4; // 28 targets per stream
  const auto segmented = evaluate(*model, source, options);
  EXPECT_EQ(segmented.tokens(), 2 * 28);
  // The same 28 targets per stream in one segment.
  sources::OrderedSegments whole_source(tokens, 2, 28);
  const auto whole = evaluate(*model, whole_source, [] {
    EvalOptions o;
    o.max_batches = 1;
    return o;
  }());
  EXPECT_NEAR(segmented.terms[0].sum, whole.terms[0].sum, 1e-3);
  EXPECT_NEAR(segmented.loss(), whole.loss(), 1e-5);
}

// The evaluator keeps the memory's projections between segments of a stream: the same totals
// as recomputing them.
TEST(Evaluator, CachedProjectionsGiveTheTotalsOfRecomputedOnes) {
  DigitsModel digits;
  std::vector<EvalResult> results;
  for (const bool cache : {true, false}) {
    sources::OrderedSegments source(digits.tokens, 3, 7);
    EvalOptions options;
    options.span.mem_len = 10;
    options.max_batches = 6;
    options.cache_projections = cache;
    results.push_back(evaluate(*digits.model, source, options));
  }
  EXPECT_EQ(results[0].tokens(), results[1].tokens());
  EXPECT_NEAR(results[0].terms[0].sum, results[1].terms[0].sum, 1e-5 * results[1].terms[0].sum);
}

// Under bf16 an evaluation casts the weights once and keeps them for its life only: the next
// evaluation, after the weights changed (a training step between two validations), scores
// what a model built with those weights scores.
TEST(Evaluator, Bf16EvaluationsEachReadTheWeightsAsTheyAreWhenTheyStart) {
  DigitsModel digits;
  DigitsModel fresh;
  const auto change = [](models::LanguageModelImpl& model) {
    const torch::NoGradGuard no_grad;
    for (auto& p : model.parameters()) {
      p.mul_(1.5);
    }
  };
  const auto score = [&](models::LanguageModelImpl& model) {
    sources::OrderedSegments source(digits.tokens, 3, 7);
    EvalOptions options;
    options.span.mem_len = 10;
    options.max_batches = 4;
    options.bf16 = true;
    return evaluate(model, source, options).terms[0].sum;
  };
  const double before = score(*digits.model);
  change(*digits.model);
  change(*fresh.model);
  const double after = score(*digits.model);
  EXPECT_NE(after, before);
  EXPECT_EQ(after, score(*fresh.model));
  EXPECT_FALSE(runtime::KeptWeightCasts::active());
}

TEST(EvalReport, MetricFollowsTheTermKindAndTheDataUnit) {
  models::TermTotal nll{"lm", TermKind::kTokenNll, 1.0, std::log(20.0) * 4, 4};
  EXPECT_EQ(metric(nll, formats::VocabKind::kWord)->name, "ppl");
  EXPECT_NEAR(metric(nll, formats::VocabKind::kWord)->value, 20.0, 1e-9);
  nll.sum = std::log(2.0) * 1.5 * 4;
  EXPECT_EQ(metric(nll, formats::VocabKind::kByte, "@stride=8")->name, "bpc@stride=8");
  EXPECT_NEAR(metric(nll, formats::VocabKind::kByte)->value, 1.5, 1e-12);
  const models::TermTotal correct{"cls_correct", TermKind::kAccuracy, 0.0, 3, 4};
  EXPECT_EQ(metric(correct, formats::VocabKind::kWord)->name, "acc");
  EXPECT_DOUBLE_EQ(metric(correct, formats::VocabKind::kWord)->value, 0.75);
  const models::TermTotal cls{"cls", TermKind::kNll, 1.0, 2, 4};
  EXPECT_FALSE(metric(cls, formats::VocabKind::kWord).has_value());
}

} // namespace
} // namespace xl::eval
