// xl-eval as a user runs it: memory and vanilla evaluation, and the span of a model trained
// without memory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;

TEST(Evaluation, MemoryAndVanillaModesReportPerplexity) {
  TempDir dir;
  ASSERT_EQ(run_command(train_command(dir / "r", "--set train.max_step=20"), dir.path()).status, 0);
  const std::string eval = std::string(kBinDir) + "/xl-eval --run " + (dir / "r").string();
  const auto memory = run_command(eval + " --max-steps 20", dir.path());
  ASSERT_EQ(memory.status, 0) << memory.output;
  EXPECT_THAT(memory.output, HasSubstr("tgt_len 16, batch 4, mem_len 32"));
  EXPECT_THAT(memory.output, HasSubstr("test | loss "));
  EXPECT_THAT(memory.output, HasSubstr(" | ppl "));
  const auto vanilla =
      run_command(eval + " --set eval.mode=vanilla --max-steps 5 --checkpoint last", dir.path());
  ASSERT_EQ(vanilla.status, 0) << vanilla.output;
  EXPECT_THAT(vanilla.output, HasSubstr("vanilla: window 16"));
  EXPECT_THAT(vanilla.output, HasSubstr("| 20 tokens |"));
  // A stride scores the last S positions of each window: labelled, never the paper's metric.
  const auto strided =
      run_command(eval + " --set eval.mode=vanilla --set eval.stride=4 --max-steps 5", dir.path());
  ASSERT_EQ(strided.status, 0) << strided.output;
  EXPECT_THAT(strided.output, HasSubstr("last 4 positions scored, slide 4"));
  EXPECT_THAT(strided.output, HasSubstr(" | ppl@stride=4 "));
  EXPECT_THAT(strided.output, HasSubstr("| 80 tokens |"));
  EXPECT_THAT(read_text(dir / "r/metrics.jsonl"), HasSubstr("\"ppl@stride=4\":"));
  const auto missing =
      run_command(std::string(kBinDir) + "/xl-eval --run " + (dir / "none").string(), dir.path());
  EXPECT_EQ(missing.status, 2);
  EXPECT_THAT(missing.output, HasSubstr("none: no such folder; name a run directory"));
  const auto file = run_command(
      std::string(kBinDir) + "/xl-eval --run " + (dir / "r/metrics.jsonl").string(), dir.path());
  EXPECT_EQ(file.status, 2);
  EXPECT_THAT(file.output, HasSubstr("metrics.jsonl: a file, not a folder"));
}

// The "no memory" ablation of a config with a long evaluation memory is evaluated as it was
// trained, without memory, unless the command line asks for one.
TEST(Evaluation, AModelTrainedWithoutMemoryIsEvaluatedWithoutOneUnlessAsked) {
  TempDir dir;
  const fs::path run = dir / "no_memory";
  ASSERT_EQ(
      run_command(
          train_command(
              run,
              "--set train.max_step=10 model.transformer_xl.mem_len=0 "
              "eval.same_length=true"),
          dir.path())
          .status,
      0);
  const std::string eval =
      std::string(kBinDir) + "/xl-eval --run " + run.string() + " --max-steps 3";
  const auto plain = run_command(eval, dir.path());
  ASSERT_EQ(plain.status, 0) << plain.output;
  EXPECT_THAT(plain.output, HasSubstr("tgt_len 16, batch 4, mem_len 0,"));
  EXPECT_THAT(plain.output, HasSubstr("same_length false"));
  EXPECT_THAT(plain.output, HasSubstr("--set eval.mem_len=32 asks for it"));
  const auto asked = run_command(eval + " --set eval.mem_len=32", dir.path());
  ASSERT_EQ(asked.status, 0) << asked.output;
  EXPECT_THAT(asked.output, HasSubstr("tgt_len 16, batch 4, mem_len 32,"));
  EXPECT_THAT(asked.output, HasSubstr("same_length true"));
}

} // namespace
} // namespace xl::test
