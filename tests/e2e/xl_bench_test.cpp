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

// The memory evaluation with and without its kept projections, in one run, each profiled; a
// mode xl-bench does not know is refused with the list, not skipped. (Every family's
// measurement: FamilyContract.BenchmarksOnRandomData.)
TEST(XlBench, ComparesTheMemoryEvaluationsAndProfilesThem) {
  TempDir dir;
  const auto both = run_command(
      app("xl-bench") + " --config " + config_file("configs/txl/tiny.yaml") +
          " --n-token 3000 --warmup 1 --steps 2 --modes eval,eval_recompute --profile 3" +
          " --json profiled.json",
      dir.path());
  ASSERT_EQ(both.status, 0) << both.output;
  EXPECT_THAT(both.output, HasSubstr("info eval "));
  EXPECT_THAT(both.output, HasSubstr("info eval_recompute "));
  EXPECT_THAT(both.output, HasSubstr("eval_recompute profiled: "));
  const auto profiled = nlohmann::json::parse(read_text(dir / "profiled.json"));
  for (const auto& record : profiled["results"]) {
    const auto& top = record["profile"]["top"];
    EXPECT_GE(top.size(), 1U) << record.dump();
    EXPECT_LE(top.size(), 3U) << record.dump();
    EXPECT_GT(record["profile"]["wall_ms"].get<double>(), 0.0) << record.dump();
  }
  const auto typo = run_command(
      app("xl-bench") + " --config " + config_file("configs/txl/tiny.yaml") + " --modes trian",
      dir.path());
  EXPECT_EQ(typo.status, 2);
  EXPECT_THAT(typo.output, HasSubstr("unknown mode 'trian'"));
}

} // namespace
} // namespace xl::test
