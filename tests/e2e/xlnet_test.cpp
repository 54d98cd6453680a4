// XLNet as a user runs it: NSMC prepared with xl-prep, pretraining with exact resume, evaluation
// of a split and of any raw text, fine-tuning from the pretrained weights, and the bad inputs of
// each step as clear errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The first `rows` data rows of an NSMC file, header kept.
fs::path nsmc_slice(
    const std::string& split,
    size_t rows,
    const fs::path& out) {
  std::istringstream in(read_text(testdata("nsmc/ratings_" + split + ".txt")));
  std::string text;
  std::string line;
  for (size_t i = 0; i <= rows && std::getline(in, line); ++i) {
    text += line + "\n";
  }
  return write_file(out, text);
}

std::string bin(const std::string& app) {
  return std::string(kBinDir) + "/" + app;
}

// 3,000 training reviews (the last 300 held out) and 500 test reviews, a 2,000-piece
// SentencePiece model: prepared once.
const fs::path& prepared() {
  static const fs::path dir = [] {
    const fs::path d = fs::temp_directory_path() /
        ("xl-e2e-xlnet-" + std::to_string(::getpid()));
    const auto train = nsmc_slice("train", 3000, d / "src/train.tsv");
    const auto test = nsmc_slice("test", 500, d / "src/test.tsv");
    auto r = run_command(
        bin("xl-prep") + " --format nsmc --train " + train.string() +
        " --test " + test.string() + " --holdout 300 --out " + d.string());
    EXPECT_EQ(r.status, 0) << r.output;
    r = run_command(
        bin("xl-prep") +
        " --format xlnet --vocab-size 2000 --character-coverage 0.995 --train " +
        (d / "train.txt").string() + " --valid " + (d / "valid.txt").string() +
        " --test " + (d / "test.txt").string() + " --out " + d.string());
    EXPECT_EQ(r.status, 0) << r.output;
    return d;
  }();
  return dir;
}

std::string train_command(
    const std::string& config,
    const fs::path& run,
    const std::string& extra = "") {
  return bin("xl-train") + " --config " + kSourceDir + "/configs/xlnet/" +
      config + " --set data.dir=" + prepared().string() +
      " --set run.dir=" + run.string() + " " + extra;
}

TEST(XLNetE2E, PretrainsResumesExactlyEvaluatesAndFineTunes) {
  TempDir dir;
  const std::string steps =
      "--set train.max_step=12 --set train.eval_interval=6";
  auto r = run_command(train_command("tiny.yaml", dir / "whole", steps));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(
      r.output, HasSubstr("permutation records: 4 rows (half backward)"));
  const auto whole = train_losses(dir / "whole");
  ASSERT_EQ(whole.size(), 12U);
  EXPECT_LT(whole.at(12), whole.at(1)); // it learns

  // Stopped at step 6 and resumed: the same batches, permutations and memory, the same losses.
  r = run_command(
      train_command("tiny.yaml", dir / "split", steps + " --stop-at-step 6"));
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(
      train_command("tiny.yaml", dir / "split", steps + " --resume"));
  ASSERT_EQ(r.status, 0) << r.output;
  const auto split = train_losses(dir / "split");
  ASSERT_EQ(split.size(), 12U);
  for (const auto& [step, loss] : whole) {
    EXPECT_DOUBLE_EQ(split.at(step), loss) << "step " << step;
  }

  // The test split, and a raw text file of the user's own.
  r = run_command(
      bin("xl-eval") + " --run " + (dir / "whole").string() + " --max-steps 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("test | loss"));
  // 150 lines of reviews the model has not seen, as a user's raw text file.
  std::istringstream test_text(read_text(prepared() / "test.txt"));
  std::string mine;
  std::string line;
  for (int i = 0; i < 150 && std::getline(test_text, line); ++i) {
    mine += line + "\n";
  }
  const auto text = write_file(dir / "mine.txt", mine + "\n");
  r = run_command(
      bin("xl-eval") + " --run " + (dir / "whole").string() + " --file " +
      text.string() + " --set eval.batch_size=2");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr(text.string() + " | loss"));

  // Fine-tuning from the pretrained weights: the heads are new and named.
  r = run_command(train_command(
      "tiny_cls.yaml",
      dir / "cls",
      "--set train.max_step=6 --set train.eval_interval=6 --set train.init_from=" +
          (dir / "whole").string()));
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(
      r.output,
      HasSubstr("fresh, not in the checkpoint: summary.weight, summary.bias, "
                "logits_proj.weight, logits_proj.bias"));
  r = run_command(bin("xl-eval") + " --run " + (dir / "cls").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("acc/cls"));
}

TEST(XLNetE2E, BadInputIsAClearErrorAndWritesNoRun) {
  TempDir dir;
  const auto fails = [&](const std::string& command, const std::string& says) {
    const auto r = run_command(command);
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(says)) << r.output;
    EXPECT_THAT(r.output, Not(HasSubstr("internal error")));
  };
  fails(
      train_command("tiny.yaml", dir / "short", "--set train.tgt_len=18"),
      "seq_len (18) must be at least reuse_len (16) + 3");
  fails(
      train_command(
          "tiny.yaml", dir / "many", "--set model.xlnet.num_predict=40"),
      "num_predict (40) is larger than a record can hold");
  EXPECT_FALSE(fs::exists(dir / "short"));
  EXPECT_FALSE(fs::exists(dir / "many"));
  fails(
      bin("xl-prep") + " --format xlnet --train " +
          write_file(dir / "empty.txt", "\n\n").string() + " --out " +
          (dir / "empty").string(),
      "empty.txt");
  fails(
      bin("xl-prep") + " --format nsmc --train " +
          write_file(dir / "bad.tsv", "id\tdocument\tlabel\n1\tgood\t7\n")
              .string() +
          " --out " + (dir / "bad").string(),
      "bad.tsv:2: the label must be 0 or 1, found '7'");
  // A fine-tuning run pointed at a checkpoint of another family: a Transformer-XL trained on
  // the same reviews as words.
  auto r = run_command(
      bin("xl-prep") + " --format word --train " +
      (prepared() / "train.txt").string() + " --out " +
      (dir / "words").string());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(
      bin("xl-train") + " --config " + kSourceDir +
      "/configs/txl/tiny.yaml --set data.dir=" + (dir / "words").string() +
      " --set data.valid=train.bin --set run.dir=" + (dir / "txl").string() +
      " --set train.max_step=2 --set train.warmup_step=1 --set train.eval_interval=2 "
      "--set train.max_eval_steps=1");
  ASSERT_EQ(r.status, 0) << r.output;
  fails(
      train_command(
          "tiny_cls.yaml",
          dir / "cls",
          "--set train.init_from=" + (dir / "txl").string()),
      "holds another model family (model.type: checkpoint transformer_xl, config xlnet)");
  EXPECT_FALSE(fs::exists(dir / "cls"));
}

} // namespace
} // namespace xl::test
