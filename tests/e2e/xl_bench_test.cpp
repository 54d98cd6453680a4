// xl-bench as a user runs it: every family measured on random data.
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

// xl-bench needs no prepared data: every family runs on random data of its shapes, and a mode
// the family lacks is skipped with the reason.
TEST(XlBench, MeasuresEveryFamilyOnRandomData) {
  TempDir dir;
  for (const std::string& config : tiny_configs()) {
    SCOPED_TRACE(config);
    const auto r = run_command(
        app("xl-bench") + " --config " + config_file(config) +
            " --n-token 3000 --warmup 1 --steps 2 --json bench.json --force",
        dir.path());
    ASSERT_EQ(r.status, 0) << r.output;
    const auto json = nlohmann::json::parse(read_text(dir / "bench.json"))["results"];
    std::set<std::string> measured;
    for (const auto& record : json) {
      measured.insert(record["mode"].get<std::string>());
      EXPECT_GT(record["tokens_per_s"].get<double>(), 0.0) << record.dump();
      EXPECT_GE(record["input_tokens_per_s"].get<double>(), record["tokens_per_s"].get<double>())
          << record.dump();
    }
    // Each default mode is measured or skipped with its reason; every family trains.
    EXPECT_EQ(measured.count("train"), 1U) << json.dump();
    for (const std::string mode : {"eval", "vanilla"}) {
      EXPECT_NE(measured.count(mode) == 1, r.output.find(mode + ": skipped, ") != std::string::npos)
          << mode << ": " << r.output;
    }
    if (config == "configs/txl/tiny.yaml") { // memory and fixed-context evaluation alike
      EXPECT_EQ(measured.size(), 3U) << json.dump();
    }
    if (config.find("xlnet") != std::string::npos) {
      EXPECT_THAT(r.output, HasSubstr("vanilla: skipped"));
    }
    if (config.find("char") != std::string::npos) { // no memory
      EXPECT_THAT(r.output, HasSubstr("eval: skipped"));
    }
  }
  // The memory evaluation with and without its kept projections, in one run, each profiled; a
  // mode it does not know is refused with the list, not skipped.
  const auto both = run_command(
      app("xl-bench") + " --config " + config_file("configs/txl/tiny.yaml") +
          " --n-token 3000 --warmup 1 --steps 2 --modes eval,eval_recompute --profile 3" +
          " --json profiled.json",
      dir.path());
  ASSERT_EQ(both.status, 0) << both.output;
  EXPECT_THAT(both.output, HasSubstr("info eval "));
  EXPECT_THAT(both.output, HasSubstr("info eval_recompute "));
  EXPECT_THAT(both.output, HasSubstr("eval_recompute profiled: "));
  for (const auto& record : nlohmann::json::parse(read_text(dir / "profiled.json"))["results"]) {
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
