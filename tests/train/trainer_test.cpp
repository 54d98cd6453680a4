// The shared trainer, training step and evaluator, tested with a model of the test's own (not a
// Transformer-XL): the weighted objective, exact normalisation across batch chunks, per-term
// logging, the non-finite-loss guard, exact resume for every batch source, exact evaluation sums.
#include "xl/train/trainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/eval/evaluator.h"
#include "xl/eval/report.h"
#include "xl/models/factory.h"
#include "xl/run/checkpoint.h"
#include "xl/run/run_dir.h"
#include "xl/runtime/autocast.h"
#include "xl/sources/corpus.h"
#include "xl/sources/ordered_segments.h"
#include "xl/sources/windows.h"
#include "xl/train/step.h"
#include "xl/util/error.h"

namespace xl::train {
namespace {

using models::TermKind;
using ::testing::HasSubstr;

// Embedding -> linear head over the vocabulary, plus a classification head. Terms: "lm" (token
// NLL of the counted targets), "even" (token NLL of the even target rows, weight `even_weight`),
// "correct" (accuracy count, weight 0). The memory is the mean of the last batch's embeddings.
// Forward calls numbered in `nan_at` (counted in training mode) return a NaN "lm".
class FakeModel : public models::LanguageModelImpl {
 public:
  FakeModel(int64_t vocab, double even_weight, std::set<int> nan_at = {})
      : even_weight_(even_weight), nan_at_(std::move(nan_at)) {
    emb = register_module("emb", torch::nn::Embedding(vocab, 8));
    head = register_module("head", torch::nn::Linear(8, vocab));
    cls = register_module("cls", torch::nn::Linear(8, 3));
  }
  void reset_parameters() override {
    for (auto& p : parameters()) {
      torch::NoGradGuard no_grad;
      p.normal_(0.0, 0.3);
    }
  }
  models::ModelOutput forward(
      const sources::Batch& batch,
      const nn::Memory& mems,
      const models::ForwardArgs& /*args*/) override {
    auto h = emb(batch.tokens); // [L, B, 8]
    if (!mems.empty()) {
      h = h + mems[0];
    }
    const int64_t t = batch.targets.size(0);
    const auto logp = torch::log_softmax(head(h.narrow(0, h.size(0) - t, t)), -1);
    auto token = logp.gather(2, batch.targets.unsqueeze(2)).squeeze(2); // [T, B]
    auto counted = batch.target_mask.defined() ? batch.target_mask
                                               : torch::ones_like(batch.targets, torch::kBool);
    const auto even = counted.slice(0, 0, t, 2);
    models::ModelOutput out;
    out.terms.push_back(
        {"lm", -token.masked_select(counted).sum(), batch.n_targets, 1.0, TermKind::kTokenNll});
    out.terms.push_back(
        {"even",
         -token.slice(0, 0, t, 2).masked_select(even).sum(),
         even.sum().item<int64_t>(),
         even_weight_,
         TermKind::kTokenNll});
    out.terms.push_back(
        {"correct",
         (logp.argmax(-1) == batch.targets).masked_select(counted).sum().to(torch::kFloat),
         batch.n_targets,
         0.0,
         TermKind::kAccuracy});
    out.logits = cls(h.mean(0));
    out.mems = {h.mean(0, true).detach()};
    if (is_training() && nan_at_.count(++calls_) > 0) {
      out.terms[0].sum = out.terms[0].sum * std::numeric_limits<float>::quiet_NaN();
    }
    return out;
  }

  torch::nn::Embedding emb{nullptr};
  torch::nn::Linear head{nullptr};
  torch::nn::Linear cls{nullptr};

 private:
  double even_weight_;
  std::set<int> nan_at_;
  int calls_ = 0;
};

// A corpus of the digits 0..9 repeated, in a fresh folder, with the tiny config over it.
struct DigitsCorpus {
  test::TempDir dir;
  config::Config config;
  DigitsCorpus() {
    test::prepare_digits_corpus(dir.path());
    config = config::load(
        std::string(test::kSourceDir) + "/configs/txl/tiny.yaml",
        {"data.dir=" + (dir / "data").string(),
         "run.dir=" + (dir / "run").string(),
         "model.transformer_xl.cutoffs=[]",
         "model.transformer_xl.div_val=1",
         "model.dropout=0.0",
         "model.dropatt=0.0"});
  }
};

std::shared_ptr<FakeModel> fake_model(int64_t vocab, double even_weight, uint64_t seed = 1) {
  torch::manual_seed(seed);
  auto model = std::make_shared<FakeModel>(vocab, even_weight);
  model->reset_parameters();
  return model;
}

torch::Tensor flat_parameters(const torch::nn::Module& model) {
  std::vector<torch::Tensor> flat;
  for (const auto& p : model.parameters()) {
    flat.push_back(p.detach().flatten().clone());
  }
  return torch::cat(flat);
}

sources::Batch digits_batch(int64_t rows, int64_t len) {
  sources::Batch batch;
  batch.tokens = torch::randint(11, {len, rows});
  batch.targets = torch::randint(11, {len, rows});
  batch.n_targets = batch.targets.numel();
  return batch;
}

StepReport sgd_step(FakeModel& model, const sources::Batch& batch, int64_t chunks) {
  config::TrainConfig t;
  t.optim = config::Optim::kSgd;
  auto optimizer = make_optimizer(t, model.parameters());
  std::vector<nn::Memory> mems(static_cast<size_t>(chunks));
  StepOptions options;
  options.chunks = chunks;
  return read_step(train_step(model, *optimizer, batch, true, mems, 0.5, 1, options));
}

TEST(TrainStep, MinimisesTheWeightedSumOfTermMeans) {
  torch::manual_seed(3);
  const auto batch = digits_batch(4, 6);
  auto stepped = fake_model(11, 0.5);
  auto manual = fake_model(11, 0.5);
  const auto result = sgd_step(*stepped, batch, 1);
  ASSERT_TRUE(result.finite);
  ASSERT_EQ(result.terms.size(), 3u);
  EXPECT_EQ(result.terms[1].name, "even");
  EXPECT_EQ(result.terms[1].count, 12); // rows 0, 2, 4 of 4 streams
  EXPECT_EQ(result.targets, 24);
  // By hand: lm/24 + 0.5 even/12; "correct" (weight 0) adds nothing.
  const auto out = manual->forward(batch, {}, {});
  (out.terms[0].sum / 24.0 + 0.5 * out.terms[1].sum / 12.0).backward();
  torch::NoGradGuard no_grad;
  for (auto& p : manual->parameters()) {
    if (p.grad().defined()) { // the classification head is not in the objective
      p.sub_(0.5 * p.grad());
    }
  }
  EXPECT_TRUE(torch::allclose(flat_parameters(*stepped), flat_parameters(*manual), 1e-6, 1e-7));
  EXPECT_NEAR(result.terms[0].sum, out.terms[0].sum.item<double>(), 1e-4);
  EXPECT_NEAR(result.terms[2].sum, out.terms[2].sum.item<double>(), 1e-9);
}

TEST(TrainStep, BatchChunksGiveTheWholeBatchsUpdate) {
  torch::manual_seed(4);
  const auto batch = digits_batch(6, 5);
  auto whole = fake_model(11, 0.5);
  auto chunked = fake_model(11, 0.5);
  const auto a = sgd_step(*whole, batch, 1);
  const auto b = sgd_step(*chunked, batch, 3);
  EXPECT_TRUE(torch::allclose(flat_parameters(*whole), flat_parameters(*chunked), 1e-6, 1e-7));
  for (size_t t = 0; t < a.terms.size(); ++t) {
    EXPECT_NEAR(a.terms[t].sum, b.terms[t].sum, 1e-4) << a.terms[t].name;
    EXPECT_EQ(a.terms[t].count, b.terms[t].count) << a.terms[t].name;
  }
}

// sqrt(w) at w = 0: a finite loss whose gradient is infinite.
class InfiniteGradient : public models::LanguageModelImpl {
 public:
  InfiniteGradient() {
    w = register_parameter("w", torch::zeros({3}));
  }
  void reset_parameters() override {}
  models::ModelOutput forward(
      const sources::Batch& batch,
      const nn::Memory& /*mems*/,
      const models::ForwardArgs& /*args*/) override {
    models::ModelOutput out;
    out.terms.push_back({"lm", w.sqrt().sum(), batch.n_targets});
    return out;
  }
  torch::Tensor w;
};

TEST(TrainStep, ANonFiniteGradientMakesNoUpdate) {
  InfiniteGradient model;
  config::TrainConfig t;
  auto optimizer = make_optimizer(t, model.parameters());
  std::vector<nn::Memory> mems(1);
  const auto result = read_step(
      train_step(model, *optimizer, digits_batch(4, 3), true, mems, 0.5, 1, StepOptions{}));
  EXPECT_FALSE(result.finite);
  EXPECT_TRUE(std::isfinite(result.terms[0].sum));
  EXPECT_TRUE(torch::equal(model.w, torch::zeros({3})));
}

TEST(TrainStep, PaddedChunksStayExact) {
  // Chunk 0 counts 6 targets, chunk 1 only 2: each is weighted by its share.
  torch::manual_seed(5);
  auto batch = digits_batch(4, 3);
  batch.target_mask = torch::tensor(
      {{true, true, true, false}, {true, true, false, false}, {true, true, true, false}});
  batch.n_targets = sources::count_targets(batch);
  ASSERT_EQ(batch.n_targets, 8);
  auto whole = fake_model(11, 0.0);
  auto chunked = fake_model(11, 0.0);
  sgd_step(*whole, batch, 1);
  sgd_step(*chunked, batch, 2);
  EXPECT_TRUE(torch::allclose(flat_parameters(*whole), flat_parameters(*chunked), 1e-6, 1e-7));
  // A weighted term that does not count in proportion to the targets cannot be split exactly.
  auto refused = fake_model(11, 0.5);
  try {
    sgd_step(*refused, batch, 2);
    FAIL() << "expected the step to refuse";
  } catch (const c10::Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("loss term 'even' counts"));
    EXPECT_THAT(e.what(), HasSubstr("train with batch_chunk 1"));
  }
}

// step -> record, from the last record of each step.
std::map<int64_t, nlohmann::json> records(
    const std::filesystem::path& run,
    const std::string& split) {
  std::map<int64_t, nlohmann::json> out;
  std::istringstream lines(test::read_text(run / "metrics.jsonl"));
  std::string line;
  while (std::getline(lines, line)) {
    const auto record = nlohmann::json::parse(line);
    if (record.value("split", "") == split) {
      out[record["step"]] = record;
    }
  }
  return out;
}

TEST(Trainer, LogsEveryTermUnderItsName) {
  DigitsCorpus corpus;
  auto& c = corpus.config;
  c.train.max_step = 10;
  const auto dataset = models::open_dataset(c);
  auto model = fake_model(dataset->vocab_size(), 0.5);
  Trainer trainer(c, run::prepare_directory(c, false), *dataset, model, torch::kCPU);
  trainer.run(false);
  const auto train = records(corpus.dir / "run", "train");
  ASSERT_EQ(train.size(), 10u);
  const auto& last = train.at(10);
  EXPECT_DOUBLE_EQ(last["loss"].get<double>(), last["loss/lm"].get<double>());
  EXPECT_NEAR(last["ppl"].get<double>(), std::exp(last["loss/lm"].get<double>()), 1e-9);
  EXPECT_TRUE(last.contains("loss/even"));
  EXPECT_GE(last["acc/correct"].get<double>(), 0.0);
  EXPECT_LE(last["acc/correct"].get<double>(), 1.0);
  const auto valid = records(corpus.dir / "run", "valid");
  ASSERT_EQ(valid.size(), 1u);
  EXPECT_TRUE(valid.at(10).contains("acc/correct"));
  EXPECT_EQ(valid.at(10)["tokens"].get<int64_t>(), 5 * 4 * 16);
}

// The training losses of a run split at `stop` equal those of an uninterrupted one, whose
// training records it returns.
std::map<int64_t, nlohmann::json> expect_exact_resume(
    config::Sampling sampling,
    bool bf16 = false) {
  DigitsCorpus full_corpus;
  const auto train =
      [bf16](DigitsCorpus& corpus, config::Sampling s, bool resume, std::optional<int64_t> stop) {
        auto& c = corpus.config;
        c.train.max_step = 14;
        c.train.sampling = s;
        c.train.batch_chunk = 2;
        c.train.bf16 = bf16;
        const auto dataset = models::open_dataset(c);
        auto model = fake_model(dataset->vocab_size(), 0.5, resume ? 99 : 1);
        Trainer trainer(c, run::prepare_directory(c, resume), *dataset, model, torch::kCPU);
        trainer.run(resume, stop);
      };
  train(full_corpus, sampling, false, std::nullopt);
  DigitsCorpus split_corpus;
  train(split_corpus, sampling, false, 6);
  train(split_corpus, sampling, true, std::nullopt);
  const auto a = records(full_corpus.dir / "run", "train");
  const auto b = records(split_corpus.dir / "run", "train");
  EXPECT_EQ(a.size(), 14u);
  for (int64_t step = 7; step <= 14; ++step) {
    EXPECT_EQ(a.at(step)["loss/lm"], b.at(step)["loss/lm"]) << "step " << step;
    EXPECT_EQ(a.at(step)["loss/even"], b.at(step)["loss/even"]) << "step " << step;
  }
  return a;
}

TEST(Trainer, ResumesExactlyFromOrderedSegments) {
  expect_exact_resume(config::Sampling::kOrdered);
}

TEST(Trainer, ResumesExactlyFromRandomWindows) {
  expect_exact_resume(config::Sampling::kRandomWindows);
}

TEST(Trainer, ResumesExactlyUnderBf16Autocast) {
  const auto bf16 = expect_exact_resume(config::Sampling::kOrdered, true);
  const auto fp32 = expect_exact_resume(config::Sampling::kOrdered, false);
  EXPECT_NE(bf16.at(14)["loss/lm"], fp32.at(14)["loss/lm"]) << "autocast changed nothing";
}

TEST(Trainer, SkipsNonFiniteStepsAndStopsAfterTooMany) {
  DigitsCorpus corpus;
  auto& c = corpus.config;
  c.train.max_step = 12;
  c.train.max_bad_steps = 3;
  const auto dataset = models::open_dataset(c);
  {
    torch::manual_seed(1);
    auto model = std::make_shared<FakeModel>(dataset->vocab_size(), 0.5, std::set<int>{3, 4});
    Trainer trainer(c, run::prepare_directory(c, false), *dataset, model, torch::kCPU);
    const auto result = trainer.run(false);
    EXPECT_EQ(result.step, 12);
    for (const auto& p : model->parameters()) {
      EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
    }
    const std::string metrics = test::read_text(corpus.dir / "run/metrics.jsonl");
    EXPECT_THAT(
        metrics,
        HasSubstr("{\"reason\":\"non-finite loss or gradient\",\"skipped\":true,\"step\":3,"));
    EXPECT_THAT(metrics, HasSubstr("\"skipped\":true,\"step\":4,"));
  }
  std::filesystem::remove_all(corpus.dir / "run");
  c.train.max_step = 20;
  torch::manual_seed(1);
  auto model = std::make_shared<FakeModel>(dataset->vocab_size(), 0.5, std::set<int>{11, 12, 13});
  Trainer trainer(c, run::prepare_directory(c, false), *dataset, model, torch::kCPU);
  try {
    trainer.run(false);
    FAIL() << "expected the run to stop";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("training stopped at step 13: 3 consecutive non-finite"));
    EXPECT_THAT(e.what(), HasSubstr("checkpoints/last.pt"));
  }
  // The checkpoint of step 10 (the last good one) is intact.
  torch::serialize::InputArchive archive;
  EXPECT_EQ(run::load_checkpoint(corpus.dir / "run/checkpoints/last.pt", archive).step, 10);
}

TEST(Evaluator, SumsDoNotDependOnHowTheWindowsAreBatched) {
  const formats::TokenTensor tokens(torch::randint(11, {300}, torch::kLong), "random");
  auto model = fake_model(11, 0.5);
  std::vector<eval::EvalResult> results;
  for (const int64_t batch_size : {3, 7}) {
    sources::SlidingWindows source(tokens, 10, 2, batch_size);
    results.push_back(eval::evaluate(*model, source, {}));
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
  sources::Corpus prepared{corpus.config.data};
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
  eval::EvalOptions options;
  options.span.mem_len = 1000;
  options.max_batches = 4; // 28 targets per stream
  const auto segmented = eval::evaluate(*model, source, options);
  EXPECT_EQ(segmented.tokens(), 2 * 28);
  // The same 28 targets per stream in one segment.
  sources::OrderedSegments whole_source(tokens, 2, 28);
  const auto whole = eval::evaluate(*model, whole_source, [] {
    eval::EvalOptions o;
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
  std::vector<eval::EvalResult> results;
  for (const bool cache : {true, false}) {
    sources::OrderedSegments source(digits.tokens, 3, 7);
    eval::EvalOptions options;
    options.span.mem_len = 10;
    options.max_batches = 6;
    options.cache_projections = cache;
    results.push_back(eval::evaluate(*digits.model, source, options));
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
    eval::EvalOptions options;
    options.span.mem_len = 10;
    options.max_batches = 4;
    options.bf16 = true;
    return eval::evaluate(model, source, options).terms[0].sum;
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
  EXPECT_EQ(eval::metric(nll, formats::VocabKind::kWord)->name, "ppl");
  EXPECT_NEAR(eval::metric(nll, formats::VocabKind::kWord)->value, 20.0, 1e-9);
  nll.sum = std::log(2.0) * 1.5 * 4;
  EXPECT_EQ(eval::metric(nll, formats::VocabKind::kByte, "@stride=8")->name, "bpc@stride=8");
  EXPECT_NEAR(eval::metric(nll, formats::VocabKind::kByte)->value, 1.5, 1e-12);
  const models::TermTotal correct{"cls_correct", TermKind::kAccuracy, 0.0, 3, 4};
  EXPECT_EQ(eval::metric(correct, formats::VocabKind::kWord)->name, "acc");
  EXPECT_DOUBLE_EQ(eval::metric(correct, formats::VocabKind::kWord)->value, 0.75);
  const models::TermTotal cls{"cls", TermKind::kNll, 1.0, 2, 4};
  EXPECT_FALSE(eval::metric(cls, formats::VocabKind::kWord).has_value());
}

} // namespace
} // namespace xl::train
