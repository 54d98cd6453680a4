// xl/xl.h on runs the commands trained: each call gives what its command gives (xl-eval --file,
// xl-sample, xl-predict), threads share one Model, opening a run changes nothing of the
// program, and every failure is one xl::Error. (Installed and linked from a project of its own:
// tests/install/install_test.py.)
#include "xl/xl.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

const std::string kText =
    "the film was released in the united states \n critics praised the game, and it sold "
    "well-ish. \n";

TEST(Library, ScoresGeneratesAndEncodesAsTheCommandsDo) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--stop-at-step 8"), dir.path()).status, 0);
  write_file(dir / "mine.txt", kText);
  const auto evaluated = run_command(
      app("xl-eval") + " --run r --file mine.txt --json e.json --per-token e.tsv", dir.path());
  ASSERT_EQ(evaluated.status, 0) << evaluated.output;
  const auto want = nlohmann::json::parse(read_text(dir / "e.json"));
  const auto tokenized = run_command(
      app("xl-eval") + " --run r --file mine.txt --pretokenized --json t.json", dir.path());
  ASSERT_EQ(tokenized.status, 0) << tokenized.output;

  const Model model = open_run((dir / "r").string());
  EXPECT_EQ(model.family(), "transformer_xl");
  EXPECT_EQ(model.step(), 8);
  EXPECT_FALSE(model.is_classifier());
  ScoreOptions listed;
  listed.per_token = true;
  const Score from_file = model.score_file((dir / "mine.txt").string(), listed);
  EXPECT_EQ(from_file.unit, Unit::kPerplexity);
  EXPECT_EQ(from_file.metric, "ppl");
  EXPECT_EQ(from_file.streams, 1);
  EXPECT_DOUBLE_EQ(from_file.perplexity, want["ppl"].get<double>());
  EXPECT_EQ(from_file.tokens, want["tokens"].get<int64_t>());
  const Score in_memory = model.score(kText);
  EXPECT_DOUBLE_EQ(in_memory.perplexity, from_file.perplexity);
  EXPECT_TRUE(in_memory.per_token.empty());
  EXPECT_DOUBLE_EQ(in_memory.in_vocabulary_perplexity, want["in_vocabulary"]["ppl"].get<double>());
  EXPECT_EQ(in_memory.in_vocabulary_tokens, want["in_vocabulary"]["tokens"].get<int64_t>());
  // Split at blanks alone, as xl-eval --pretokenized: "game," and "well-ish." are no words.
  ScoreOptions as_tokens;
  as_tokens.pretokenized = true;
  const Score blanks = model.score(kText, as_tokens);
  const auto want_blanks = nlohmann::json::parse(read_text(dir / "t.json"));
  EXPECT_DOUBLE_EQ(blanks.perplexity, want_blanks["ppl"].get<double>());
  EXPECT_GT(blanks.unknown, in_memory.unknown);
  // Every token of the text in order, as --per-token lists it; the scored ones sum to the
  // log-likelihood (float32 log-probabilities).
  std::istringstream rows(read_text(dir / "e.tsv"));
  std::string row;
  std::getline(rows, row);
  double sum = 0.0;
  size_t listed_rows = 0;
  for (; std::getline(rows, row); ++listed_rows) {
    ASSERT_LT(listed_rows, from_file.per_token.size());
    const auto& t = from_file.per_token[listed_rows];
    EXPECT_EQ(static_cast<size_t>(t.index), listed_rows);
    EXPECT_EQ(row.substr(row.find('\t') + 1, t.token.size()), t.token);
    // Where it stands in the text: the row's offset and text columns.
    const auto offset_at = row.find('\t', row.find('\t', row.find('\t') + 1) + 1) + 1;
    EXPECT_EQ(
        row.substr(offset_at), std::to_string(t.offset) + "\t" + (t.text == "\n" ? "\\n" : t.text));
    EXPECT_EQ(kText.substr(static_cast<size_t>(t.offset), t.text.size()), t.text);
    sum += std::isnan(t.log_prob) ? 0.0 : t.log_prob;
  }
  EXPECT_EQ(listed_rows, from_file.per_token.size());
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
  const Generated generated = model.generate("the game", options, [&](const std::string& piece) {
    streamed += piece;
    return true;
  });
  EXPECT_EQ(streamed, generated.text);
  EXPECT_EQ(generated.ids.size(), 25U);
  EXPECT_FALSE(generated.stopped);
  EXPECT_EQ(read_text(dir / "sampled.txt"), "the game" + generated.text + "\n");
  // The callback stops it; the tokens so far are those of the whole generation.
  int64_t calls = 0;
  const Generated stopped =
      model.generate("the game", options, [&](const std::string&) { return ++calls < 5; });
  EXPECT_TRUE(stopped.stopped);
  ASSERT_EQ(stopped.ids.size(), 5U);
  EXPECT_TRUE(std::equal(stopped.ids.begin(), stopped.ids.end(), generated.ids.begin()));

  const auto ids = model.encode("the game");
  EXPECT_EQ(ids.size(), 2U);
  EXPECT_EQ(model.decode(ids), "the game");
}

// Four threads on one Model: each call gives the single-thread numbers.
TEST(Library, ThreadsShareOneModelAndGetTheSingleThreadNumbers) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--stop-at-step 4"), dir.path()).status, 0);
  const Model model = open_run((dir / "r").string());
  const std::vector<std::string> texts{
      kText, "the game was released .\n", std::string(kText) + kText, "critics praised it \n"};
  GenerateOptions options;
  options.tokens = 12;
  std::vector<double> alone;
  std::vector<std::vector<int64_t>> drawn;
  for (size_t t = 0; t < texts.size(); ++t) {
    alone.push_back(model.score(texts[t]).loss);
    options.seed = t;
    drawn.push_back(model.generate("the", options).ids);
  }
  std::vector<std::vector<double>> losses(texts.size());
  std::vector<std::vector<std::vector<int64_t>>> generated(texts.size());
  std::vector<std::thread> threads;
  for (size_t t = 0; t < texts.size(); ++t) {
    threads.emplace_back([&, t] {
      GenerateOptions mine = options;
      mine.seed = t;
      for (int round = 0; round < 3; ++round) {
        losses[t].push_back(model.score(texts[t]).loss);
        generated[t].push_back(model.generate("the", mine).ids);
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  for (size_t t = 0; t < texts.size(); ++t) {
    for (size_t round = 0; round < 3; ++round) {
      EXPECT_EQ(losses[t][round], alone[t]) << "thread " << t << ", round " << round;
      EXPECT_EQ(generated[t][round], drawn[t]) << "thread " << t << ", round " << round;
    }
  }
}

// Opening a run draws nothing from the program's random sequence, leaves its threads, and
// writes nothing: a text held in memory is scored with TMPDIR unwritable.
TEST(Library, OpeningARunChangesNothingOfTheProgram) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--stop-at-step 4"), dir.path()).status, 0);
  torch::manual_seed(123);
  const auto expected = torch::randn({8});
  torch::manual_seed(123);
  const auto first = torch::randn({4});
  const int threads = torch::get_num_threads();
  const Model model = open_run((dir / "r").string());
  const auto second = torch::randn({4});
  EXPECT_TRUE(torch::equal(torch::cat({first, second}), expected));
  EXPECT_EQ(torch::get_num_threads(), threads);
  const Score before = model.score(kText);

  const char* old = std::getenv("TMPDIR");
  const std::string kept = old == nullptr ? "" : old;
  ::setenv("TMPDIR", (dir / "no-such-folder").c_str(), 1);
  ScoreOptions listed;
  listed.per_token = true;
  const Score in_memory = model.score(kText, listed);
  if (old == nullptr) {
    ::unsetenv("TMPDIR");
  } else {
    ::setenv("TMPDIR", kept.c_str(), 1);
  }
  EXPECT_EQ(in_memory.loss, before.loss);
  EXPECT_FALSE(in_memory.per_token.empty());

  // Asked for, an open sets them as the commands do.
  RunOptions asked;
  asked.threads = 1;
  asked.seed = 5;
  open_run((dir / "r").string(), asked);
  EXPECT_EQ(torch::get_num_threads(), 1);
  const auto seeded = torch::randn({3});
  torch::manual_seed(5);
  EXPECT_TRUE(torch::equal(seeded, torch::randn({3})));
  torch::set_num_threads(threads);
}

// One documented exception per kind, with one-line messages that name the library's calls;
// nothing printed, not a byte of the run written.
TEST(Library, EveryFailureIsAnErrorThatNamesTheLibrarysCalls) {
  TempDir dir;
  EXPECT_THAT(
      user_error([&] { open_run((dir / "missing").string()); }), HasSubstr("no such folder"));
  ASSERT_EQ(run_command(train_command(dir / "r", "--stop-at-step 4"), dir.path()).status, 0);
  const auto before = files_of(dir / "r");
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  RunOptions missing;
  missing.checkpoint = "step_99";
  EXPECT_THAT(
      user_error([&] { open_run((dir / "r").string(), missing); }),
      HasSubstr("checkpoint 'step_99' not found"));
  RunOptions unknown;
  unknown.overrides = {"train.lrr=1"};
  EXPECT_THAT(
      user_error([&] { open_run((dir / "r").string(), unknown); }),
      HasSubstr("unknown key 'train.lrr'"));
  Model model = open_run((dir / "r").string());
  EXPECT_THAT(user_error([&] { model.classify({"a text"}); }), HasSubstr("is a language model"));
  EXPECT_THAT(user_error([&] { model.decode({-1}); }), HasSubstr("outside the vocabulary"));
  EXPECT_THAT(user_error([&] { model.score(std::string(64, '\xff')); }), HasSubstr("not UTF-8"));
  EXPECT_THAT(
      user_error([&] { model.score_file((dir / "none.txt").string()); }), HasSubstr("none.txt"));
  ScoreOptions no_streams;
  no_streams.streams = 0;
  EXPECT_THAT(
      user_error([&] { model.score(kText, no_streams); }), HasSubstr("ScoreOptions::streams 0"));
  GenerateOptions bad;
  bad.temperature = 1e9;
  EXPECT_THAT(
      user_error([&] { model.generate("the", bad); }),
      HasSubstr("GenerateOptions::temperature 1000000000"));
  bad = {};
  bad.tokens = 0;
  EXPECT_THAT(
      user_error([&] { model.generate("the", bad); }), HasSubstr("GenerateOptions::tokens"));
  bad = {};
  bad.top_k = -1;
  EXPECT_THAT(user_error([&] { model.generate("the", bad); }), HasSubstr("GenerateOptions::top_k"));
  bad = {};
  bad.use_memory = false;
  bad.window = 0;
  EXPECT_THAT(
      user_error([&] { model.generate("the", bad); }), HasSubstr("GenerateOptions::window"));
  // The caller's own exception comes back as it was thrown.
  EXPECT_THROW(
      model.generate(
          "the", {}, [](const std::string&) -> bool { throw std::out_of_range("mine"); }),
      std::out_of_range);
  model.score(kText);
  // A moved-from Model holds nothing: a UserError, not a crash.
  const Model moved = std::move(model);
  EXPECT_THAT(user_error([&] { model.score(kText); }), HasSubstr("moved from")); // NOLINT
  EXPECT_GT(moved.score(kText).tokens, 0);
  const std::string printed =
      testing::internal::GetCapturedStdout() + testing::internal::GetCapturedStderr();
  EXPECT_EQ(printed, "");
  EXPECT_EQ(files_of(dir / "r"), before);

  // A damaged checkpoint.
  fs::resize_file(dir / "r" / "checkpoints" / "best.pt", 100);
  EXPECT_THAT(user_error([&] { open_run((dir / "r").string()); }), HasSubstr("best.pt"));
  // Both kinds are an xl::Error.
  try {
    open_run((dir / "r").string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(dynamic_cast<const UserError*>(&e), nullptr);
  }
}

// A classifier's probabilities and class names are xl-predict's; its SentencePiece model encodes
// and decodes.
TEST(Library, ClassifiesAsXlPredict) {
  TempDir dir;
  const auto trained = run_command(
      app("xl-train") + " --config " + config_file("configs/xlnet/tiny_cls.yaml") +
          " --set data.dir=" + nsmc_dir().string() +
          " run.dir=r train.max_step=4 train.warmup_step=0 model.xlnet.labels=[bad,good]",
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
      HasSubstr("generate() generates from causal language models"));
  ScoreOptions listed;
  listed.per_token = true;
  EXPECT_THAT(
      user_error([&] { model.score("1\t영화\n", listed); }),
      HasSubstr("ScoreOptions::per_token lists the tokens a language model scores"));
  for (const auto& [text, problem] : std::vector<std::pair<std::string, std::string>>{
           {"", "text 1 of 1 has no text"},
           {"  \t", "text 1 of 1 has no text"},
           {"\xff\xfe", "text 1 of 1 is not UTF-8"},
           {std::string("a\0b", 3), "text 1 of 1 holds a NUL byte"}}) {
    EXPECT_THAT(user_error([&] { model.classify({text}); }), HasSubstr(problem));
  }
  const Score examples = model.score("1\t" + texts[0] + "\n0\t" + texts[1] + "\n");
  EXPECT_EQ(examples.unit, Unit::kExampleLoss);
  EXPECT_EQ(examples.tokens, 2);
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
    EXPECT_EQ(c.name, label == 1 ? "good" : "bad");
    EXPECT_EQ(tab_fields(row).at(4), c.name) << row; // the run's names, as no --labels gave
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
