// xl-bench as a user runs it: its modes, its profile and its refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "e2e_util.h"
#include "test_util.h"

namespace xl::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// The memory evaluation with and without its kept projections, in one run, each profiled; a
// mode xl-bench does not know is refused with the list, not skipped. (Every family's
// measurement: FamilyContract.BenchmarksOnRandomData.)
TEST(XlBench, ComparesTheMemoryEvaluationsAndProfilesThem) {
  TempDir dir;
  const auto both = run_command(
      app("xl-bench") + " --config " + config_file("configs/transformer_xl/tiny.yaml") +
          " --n-token 3000 --warmup 1 --steps 2 --modes eval,eval_recompute --profile 3" +
          " --json profiled.json",
      dir.path());
  ASSERT_EQ(both.status, 0) << both.output;
  EXPECT_THAT(both.output, HasSubstr("info eval "));
  EXPECT_THAT(both.output, HasSubstr("info eval_recompute "));
  EXPECT_THAT(both.output, HasSubstr("eval_recompute profiled: "));
  // The profiler's own complaints (Kineto finds no GPU on the CPU) are not the user's business.
  EXPECT_THAT(both.output, Not(HasSubstr("gpuGetDeviceCount")));
  EXPECT_THAT(both.output, Not(HasSubstr("ERROR:")));
  const auto profiled = nlohmann::json::parse(read_text(dir / "profiled.json"));
  for (const auto& record : profiled["results"]) {
    const auto& top = record["profile"]["top"];
    EXPECT_GE(top.size(), 1U) << record.dump();
    EXPECT_LE(top.size(), 3U) << record.dump();
    EXPECT_GT(record["profile"]["wall_ms"].get<double>(), 0.0) << record.dump();
  }
  const auto typo = run_command(
      app("xl-bench") + " --config " + config_file("configs/transformer_xl/tiny.yaml") +
          " --modes trian",
      dir.path());
  EXPECT_EQ(typo.status, 2);
  EXPECT_THAT(typo.output, HasSubstr("unknown mode 'trian'"));
  const auto none = run_command(
      app("xl-bench") + " --config " + config_file("configs/transformer_xl/tiny.yaml") +
          " --modes ''",
      dir.path());
  EXPECT_EQ(none.status, 2);
  EXPECT_THAT(none.output, HasSubstr("no mode given"));
}

// --prepared-data: training reads the prepared training split, each evaluation mode the test
// split in its own batches (vanilla windows are not memory segments); the vocabulary is the
// prepared one, and another --n-token is refused.
TEST(XlBench, ReadsThePreparedDataInEachModesBatches) {
  TempDir dir;
  const std::string base = app("xl-bench") + " --config " +
      config_file("configs/transformer_xl/tiny.yaml") + " --set data.dir=" + corpus_dir().string() +
      " --set train.threads=1 --prepared-data --warmup 0 --steps 1";
  const auto run =
      run_command(base + " --modes train,eval,vanilla --json prepared.json", dir.path());
  ASSERT_EQ(run.status, 0) << run.output;
  const auto results = nlohmann::json::parse(read_text(dir / "prepared.json"))["results"];
  ASSERT_EQ(results.size(), 3U) << results.dump();
  std::set<std::string> modes;
  for (const auto& record : results) {
    const auto mode = record["mode"].get<std::string>();
    const auto setting = record["setting"].get<std::string>();
    modes.insert(mode);
    if (mode == "train") {
      EXPECT_THAT(setting, HasSubstr((corpus_dir() / "train.bin").string()));
      EXPECT_THAT(setting, ::testing::Not(HasSubstr("random")));
    } else if (mode == "vanilla") {
      EXPECT_THAT(setting, HasSubstr("vanilla: window"));
    } else {
      EXPECT_THAT(setting, ::testing::StartsWith("tgt_len"));
    }
  }
  EXPECT_EQ(modes, (std::set<std::string>{"train", "eval", "vanilla"}));
  const auto other = run_command(base + " --modes train --n-token 7", dir.path());
  EXPECT_EQ(other.status, 2);
  EXPECT_THAT(other.output, HasSubstr("--n-token 7 with --prepared-data"));
}

} // namespace
} // namespace xl::test
