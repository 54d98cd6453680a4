// xl/xl.h on runs the commands trained: each call gives what its command gives (xl-eval --file,
// xl-sample, xl-predict), and every failure is one UserError. (Installed and linked from a
// project of its own: tests/install/install_test.py.)
#include "xl/xl.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

const std::string kText =
    "the film was released in the united states \n critics praised the game , and it sold well "
    ". \n";

TEST(Library, ScoresGeneratesAndEncodesAsTheCommandsDo) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--stop-at-step 8"), dir.path()).status, 0);
  write_file(dir / "mine.txt", kText);
  const auto evaluated = run_command(
      app("xl-eval") + " --run r --file mine.txt --json e.json --per-token e.tsv", dir.path());
  ASSERT_EQ(evaluated.status, 0) << evaluated.output;
  const auto want = nlohmann::json::parse(read_text(dir / "e.json"));

  const Model model = open_run((dir / "r").string());
  EXPECT_EQ(model.family(), "transformer_xl");
  EXPECT_EQ(model.step(), 8);
  EXPECT_FALSE(model.is_classifier());
  const Score from_file = model.score_file((dir / "mine.txt").string(), {true});
  EXPECT_EQ(from_file.unit, "ppl");
  EXPECT_DOUBLE_EQ(from_file.perplexity, want["ppl"].get<double>());
  EXPECT_EQ(from_file.tokens, want["tokens"].get<int64_t>());
  const Score in_memory = model.score(kText);
  EXPECT_DOUBLE_EQ(in_memory.perplexity, from_file.perplexity);
  EXPECT_TRUE(in_memory.per_token.empty());
  // Every token of the text in order, as --per-token lists it; the scored ones sum to the
  // log-likelihood (float32 log-probabilities).
  std::istringstream rows(read_text(dir / "e.tsv"));
  std::string row;
  std::getline(rows, row);
  double sum = 0.0;
  size_t listed = 0;
  for (; std::getline(rows, row); ++listed) {
    ASSERT_LT(listed, from_file.per_token.size());
    const auto& t = from_file.per_token[listed];
    EXPECT_EQ(static_cast<size_t>(t.index), listed);
    EXPECT_EQ(row.substr(row.find('\t') + 1, t.token.size()), t.token);
    sum += std::isnan(t.log_prob) ? 0.0 : t.log_prob;
  }
  EXPECT_EQ(listed, from_file.per_token.size());
  EXPECT_NEAR(sum, from_file.log_likelihood, 1e-4 * std::abs(from_file.log_likelihood));

  // The same seed, the same text as xl-sample, streamed piece by piece.
  ASSERT_EQ(
      run_command(
          "(" + app("xl-sample") +
              " --run r --prompt 'the game' --tokens 25 --seed 11 >sampled.txt 2>/dev/null)",
          dir.path())
          .status,
      0);
  GenerateOptions options;
  options.tokens = 25;
  options.seed = 11;
  std::string streamed;
  const Generated generated =
      model.generate("the game", options, [&](const std::string& piece) { streamed += piece; });
  EXPECT_EQ(streamed, generated.text);
  EXPECT_EQ(generated.ids.size(), 25U);
  EXPECT_EQ(read_text(dir / "sampled.txt"), "the game" + generated.text + "\n");

  const auto ids = model.encode("the game");
  EXPECT_EQ(ids.size(), 2U);
  EXPECT_EQ(model.decode(ids), "the game");
}

// One documented exception, with the commands' one-line messages; nothing printed, not a byte
// of the run written.
TEST(Library, EveryFailureIsAUserError) {
  TempDir dir;
  EXPECT_THAT(
      user_error([&] { open_run((dir / "missing").string()); }), HasSubstr("no such folder"));
  ASSERT_EQ(run_command(train_command(dir / "r", "--stop-at-step 4"), dir.path()).status, 0);
  const auto before = files_of(dir / "r");
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  EXPECT_THAT(
      user_error([&] {
        open_run((dir / "r").string(), {"step_99", {}, true});
      }),
      HasSubstr("checkpoint 'step_99' not found"));
  EXPECT_THAT(
      user_error([&] {
        open_run((dir / "r").string(), {"best", {"train.lrr=1"}, true});
      }),
      HasSubstr("unknown key 'train.lrr'"));
  const Model model = open_run((dir / "r").string());
  EXPECT_THAT(user_error([&] { model.classify({"a text"}); }), HasSubstr("is a language model"));
  EXPECT_THAT(user_error([&] { model.decode({-1}); }), HasSubstr("outside the vocabulary"));
  EXPECT_THAT(user_error([&] { model.score(std::string(64, '\xff')); }), HasSubstr("not UTF-8"));
  EXPECT_THAT(
      user_error([&] { model.score_file((dir / "none.txt").string()); }), HasSubstr("none.txt"));
  GenerateOptions hot;
  hot.temperature = 1e9;
  EXPECT_THAT(user_error([&] { model.generate("the", hot); }), HasSubstr("--temperature"));
  EXPECT_THAT(user_error([] { set_log_level("loud"); }), HasSubstr("expected off, error, warn"));
  model.score(kText);
  const std::string printed =
      testing::internal::GetCapturedStdout() + testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "");
  EXPECT_EQ(files_of(dir / "r"), before);

  // A damaged checkpoint.
  fs::resize_file(dir / "r" / "checkpoints" / "best.pt", 100);
  EXPECT_THAT(user_error([&] { open_run((dir / "r").string()); }), HasSubstr("best.pt"));
}

// A classifier's probabilities are xl-predict's; its SentencePiece model encodes and decodes.
TEST(Library, ClassifiesAsXlPredict) {
  TempDir dir;
  const auto trained = run_command(
      app("xl-train") + " --config " + config_file("configs/xlnet/tiny_cls.yaml") +
          " --set data.dir=" + nsmc_dir().string() +
          " run.dir=r train.max_step=4 train.warmup_step=0",
      dir.path());
  ASSERT_EQ(trained.status, 0) << trained.output;
  const std::vector<std::string> texts{"정말 재미있는 영화", "시간이 아까운 영화였다"};
  write_file(dir / "texts.txt", texts[0] + "\n" + texts[1] + "\n");
  const auto predicted =
      run_command(app("xl-predict") + " --run r --file texts.txt --out p.tsv", dir.path());
  ASSERT_EQ(predicted.status, 0) << predicted.output;
  const Model model = open_run((dir / "r").string());
  EXPECT_TRUE(model.is_classifier());
  EXPECT_THAT(
      user_error([&] { model.generate("영화"); }),
      HasSubstr("generates from causal language models"));
  const auto classified = model.classify(texts);
  ASSERT_EQ(classified.size(), 2U);
  std::istringstream rows(read_text(dir / "p.tsv"));
  std::string row;
  std::getline(rows, row);
  for (const auto& c : classified) {
    ASSERT_TRUE(std::getline(rows, row));
    std::istringstream fields(row);
    int64_t line = 0;
    int64_t label = 0;
    double p0 = 0.0;
    double p1 = 0.0;
    fields >> line >> label >> p0 >> p1;
    EXPECT_EQ(c.label, label) << row;
    ASSERT_EQ(c.probabilities.size(), 2U);
    EXPECT_NEAR(c.probabilities[0], p0, 1e-6) << row;
    EXPECT_NEAR(c.probabilities[1], p1, 1e-6) << row;
    EXPECT_NEAR(c.probabilities[0] + c.probabilities[1], 1.0, 1e-9);
  }
  const auto ids = model.encode(texts[0]);
  EXPECT_FALSE(ids.empty());
  EXPECT_EQ(model.decode(ids), texts[0]);
}

} // namespace
} // namespace xl::test
