// Trainer behaviour with controlled models: the non-finite-loss guard, batch
// chunks, and the evaluator's exact sums.
#include "xl/train/trainer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/data/lm_iterator.h"
#include "xl/models/factory.h"
#include "xl/run/checkpoint.h"
#include "xl/run/run_dir.h"
#include "xl/train/evaluator.h"
#include "xl/util/error.h"

namespace xl::train {
namespace {

using ::testing::HasSubstr;

// A corpus of the digits 0..9 repeated, in a fresh folder.
struct DigitsCorpus {
  test::TempDir dir;
  config::Config config;
  DigitsCorpus() {
    std::string text;
    for (int line = 0; line < 200; ++line) {
      text += "0 1 2 3 4 5 6 7 8 9\n";
    }
    data::PrepOptions options;
    options.splits["train"] = test::write_file(dir / "train.txt", text);
    options.splits["valid"] = test::write_file(dir / "valid.txt", text);
    options.out = dir / "data";
    data::prepare_corpus(options);
    config = config::load(
        std::string(test::kSourceDir) + "/configs/txl/tiny.yaml",
        {"data.dir=" + (dir / "data").string(),
         "run.dir=" + (dir / "run").string(),
         "model.cutoffs=[]",
         "model.div_val=1",
         "model.dropout=0.0",
         "model.dropatt=0.0"});
  }
};

// Transformer-XL whose loss turns NaN on chosen forward calls.
class FlakyModel : public models::TransformerXLImpl {
 public:
  FlakyModel(models::TransformerXLOptions model_options, std::set<int> bad)
      : TransformerXLImpl(std::move(model_options)), bad_(std::move(bad)) {}
  models::LMOutput forward(
      const torch::Tensor& input,
      const torch::Tensor& target,
      const nn::Memory& mems,
      bool return_log_probs) override {
    auto out =
        TransformerXLImpl::forward(input, target, mems, return_log_probs);
    if (is_training() && bad_.count(++calls_) > 0) {
      out.nll_sum = out.nll_sum * std::numeric_limits<float>::quiet_NaN();
    }
    return out;
  }

 private:
  std::set<int> bad_;
  int calls_ = 0;
};

TEST(Trainer, SkipsNonFiniteStepsAndStopsAfterTooMany) {
  DigitsCorpus corpus;
  auto& c = corpus.config;
  c.train.max_step = 12;
  c.train.max_bad_steps = 3;
  data::Corpus data(c.data);
  const auto options =
      models::transformer_xl_options(c.model, data.vocab().size());
  {
    auto model = std::make_shared<FlakyModel>(options, std::set<int>{3, 4});
    Trainer trainer(
        c, run::prepare_run_directory(c, false), data, model, torch::kCPU);
    const auto result = trainer.run(false);
    EXPECT_EQ(result.step, 12);
    for (const auto& p : model->parameters()) {
      EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
    }
    const std::string metrics =
        test::read_text(corpus.dir / "run/metrics.jsonl");
    EXPECT_THAT(
        metrics,
        HasSubstr(
            "{\"reason\":\"non-finite loss\",\"skipped\":true,\"step\":3}"));
    EXPECT_THAT(metrics, HasSubstr("\"skipped\":true,\"step\":4}"));
  }
  std::filesystem::remove_all(corpus.dir / "run");
  c.train.max_step = 20;
  auto model = std::make_shared<FlakyModel>(options, std::set<int>{11, 12, 13});
  Trainer trainer(
      c, run::prepare_run_directory(c, false), data, model, torch::kCPU);
  try {
    trainer.run(false);
    FAIL() << "expected the run to stop";
  } catch (const UserError& e) {
    EXPECT_THAT(
        e.what(),
        HasSubstr("training stopped at step 13: 3 consecutive non-finite"));
    EXPECT_THAT(e.what(), HasSubstr("checkpoints/last.pt"));
  }
  // The checkpoint of step 10 (the last good one) is intact.
  torch::serialize::InputArchive archive;
  EXPECT_EQ(
      run::load_checkpoint(corpus.dir / "run/checkpoints/last.pt", archive)
          .step,
      10);
}

TEST(Trainer, BatchChunksGiveTheSameStepsAsWholeBatches) {
  std::vector<torch::Tensor> finals;
  for (const int64_t chunks : {1, 2}) {
    DigitsCorpus corpus;
    auto& c = corpus.config;
    c.train.max_step = 5;
    c.train.batch_chunk = chunks;
    // plain SGD without clipping: any error in scaling the chunk losses shows
    // in the weights
    c.train.optim = "sgd";
    c.train.clip = 0.0;
    c.train.lr = 0.5;
    data::Corpus data(c.data);
    torch::manual_seed(1);
    auto model = models::build_model(c.model, data.vocab().size());
    Trainer trainer(
        c, run::prepare_run_directory(c, false), data, model, torch::kCPU);
    trainer.run(false);
    finals.push_back(torch::cat([&] {
      std::vector<torch::Tensor> flat;
      for (const auto& p : model->parameters()) {
        flat.push_back(p.detach().flatten());
      }
      return flat;
    }()));
  }
  EXPECT_TRUE(torch::allclose(finals[0], finals[1], 1e-4, 1e-5));
}

TEST(Evaluator, MemoryEvaluationEqualsOneLongPassWhenTheMemoryHoldsEverything) {
  DigitsCorpus corpus;
  data::Corpus data(corpus.config.data);
  torch::manual_seed(2);
  auto model = models::build_model(corpus.config.model, data.vocab().size());
  const auto& tokens = data.split("valid");
  EvalSettings settings;
  settings.batch_size = 2;
  settings.tgt_len = 7;
  settings.lengths.mem_len = 1000;
  settings.max_steps = 4; // 28 targets per stream
  const auto segmented = evaluate(*model, tokens, settings, torch::kCPU);
  EXPECT_EQ(segmented.count, 2 * 28);
  // The same 28 targets per stream in one segment.
  data::LMOrderedIterator it(tokens, 2, 28);
  const auto whole = it.next();
  model->eval();
  torch::NoGradGuard no_grad;
  const auto out = model->forward(whole.input, whole.target, {});
  EXPECT_NEAR(segmented.nll_sum, out.nll_sum.item<double>(), 1e-3);
  EXPECT_NEAR(segmented.loss(), out.nll_sum.item<double>() / 56.0, 1e-5);
}

TEST(Evaluator, MetricIsPerplexityOrBitsPerCharacter) {
  EXPECT_EQ(metric(data::VocabKind::kWord, std::log(20.0)).name, "ppl");
  EXPECT_NEAR(metric(data::VocabKind::kWord, std::log(20.0)).value, 20.0, 1e-9);
  EXPECT_EQ(metric(data::VocabKind::kByte, std::log(2.0)).name, "bpc");
  EXPECT_NEAR(
      metric(data::VocabKind::kByte, std::log(2.0) * 1.5).value, 1.5, 1e-12);
}

} // namespace
} // namespace xl::train
