// The character transformer as a user runs it: bytes prepared with xl-prep, training with the
// auxiliary losses and exact resume, the paper's evaluation and its labelled approximation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

TEST(CharTransformerE2E, TrainsWithAuxiliaryLossesResumesAndEvaluates) {
  TempDir dir;
  const auto text = read_text(testdata("enwik8/enwik8-prefix-1M"));
  write_file(dir / "train.txt", text.substr(0, 200000));
  write_file(dir / "test.txt", text.substr(200000, 20000));
  auto r = run_command(
      app("xl-prep") +
          " --format byte --vocab-from all --train train.txt --valid test.txt --test "
          "test.txt --out data",
      dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  const std::string train = app("xl-train") + " --config " + kSourceDir +
      "/configs/char_transformer/tiny.yaml --set data.dir=data --set train.max_step=16 "
      "--set train.eval_interval=8 ";
  r = run_command(train + "--set run.dir=whole", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto whole = train_losses(dir / "whole");
  ASSERT_EQ(whole.size(), 16U);

  // Every head's term is logged while its layer contributes: layer 1 of 4 until 16 / 8 = 2
  // steps are done, layer 3 until 6; the last layer's t+2 always.
  std::map<int64_t, nlohmann::json> records;
  std::istringstream lines(read_text(dir / "whole/metrics.jsonl"));
  std::string line;
  while (std::getline(lines, line)) {
    const auto record = nlohmann::json::parse(line);
    if (record.value("split", "") == "train") {
      records[record["step"]] = record;
    }
  }
  EXPECT_TRUE(records.at(2).contains("loss/l1/t+1"));
  EXPECT_FALSE(records.at(3).contains("loss/l1/t+1"));
  EXPECT_TRUE(records.at(6).contains("loss/l3/t+2"));
  EXPECT_FALSE(records.at(7).contains("loss/l3/t+2"));
  EXPECT_TRUE(records.at(16).contains("loss/l4/t+2"));

  // Stopped and resumed: the same windows and the same losses.
  r = run_command(train + "--set run.dir=split --stop-at-step 5", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  r = run_command(train + "--set run.dir=split --resume", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto split = train_losses(dir / "split");
  for (const auto& [step, loss] : whole) {
    EXPECT_DOUBLE_EQ(split.at(step), loss) << "step " << step;
  }

  // The approximation is labelled; the paper's metric (stride 1) is not.
  r = run_command(app("xl-eval") + " --run whole", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("bpc@stride=8"));
  r = run_command(app("xl-eval") + " --run whole --set eval.stride=1 --max-steps 3", dir.path());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("last position scored"));
  EXPECT_THAT(r.output, HasSubstr("| bpc "));

  // Bytes generated after the prompt, each read alone over the decoding cache (no memory).
  r = run_command(
      "{ " + app("xl-sample") + " --run whole --prompt '<page>' --tokens 24 --seed 2 2>err.log; }",
      dir.path());
  ASSERT_EQ(r.status, 0) << read_text(dir / "err.log");
  EXPECT_EQ(r.output.rfind("<page>", 0), 0U) << r.output;
  EXPECT_EQ(r.output.size(), 6U + 24U + 1U); // the prompt, the bytes, a line break
  EXPECT_THAT(
      read_text(dir / "err.log"), HasSubstr("one position per token over a cache of up to 32"));
  r = run_command(app("xl-sample") + " --run whole --window 33", dir.path());
  EXPECT_EQ(r.status, 2);
  EXPECT_THAT(r.output, HasSubstr("--window 33: this model's learned position tables hold 32"));
}

// Each refused up front with exit 2 and one line naming the cause.
TEST(CharTransformerE2E, BadInputIsAOneLineError) {
  TempDir dir;
  const auto text = read_text(testdata("enwik8/enwik8-prefix-1M"));
  write_file(dir / "train.txt", text.substr(0, 20000));
  for (const std::string format : {"byte", "word"}) {
    const auto r = run_command(
        app("xl-prep") + " --format " + format +
            " --vocab-from all --train train.txt --valid train.txt --test "
            "train.txt --out " +
            format,
        dir.path());
    ASSERT_EQ(r.status, 0) << r.output;
  }
  const std::string char_train = app("xl-train") + " --config " + kSourceDir +
      "/configs/char_transformer/tiny.yaml --set run.dir=run --set data.dir=";
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {char_train + "word", "model.type char_transformer reads bytes"},
           {app("xl-train") + " --config " + kSourceDir +
                "/configs/transformer_xl/wt103_base.yaml --set data.dir=byte",
            "must be below the vocabulary size"},
           {char_train + "byte --set train.tgt_len=33", "model.char_transformer.n_ctx = 32"},
           {char_train + "byte --set eval.stride=33", "eval.stride"}}) {
    SCOPED_TRACE(args);
    const auto r = run_command(args, dir.path());
    EXPECT_EQ(r.status, 2) << r.output;
    EXPECT_THAT(r.output, HasSubstr(message));
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
}

} // namespace
} // namespace xl::test
