// The shared trainer and training step, tested with a model of the test's own (not a
// Transformer-XL; train/fake_model.h): the weighted objective, exact normalisation across batch
// chunks, per-term logging, the non-finite-loss guard, exact resume for every batch source.
#include "xl/train/trainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "train/fake_model.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/run/checkpoint.h"
#include "xl/run/run_dir.h"
#include "xl/train/step.h"
#include "xl/util/error.h"

namespace xl::train {
namespace {

using models::TermKind;
using test::DigitsCorpus;
using test::fake_model;
using test::FakeModel;
using ::testing::HasSubstr;

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

} // namespace
} // namespace xl::train
