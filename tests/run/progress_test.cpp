#include "xl/run/progress.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

namespace xl::run {
namespace {

TEST(Progress, FormatsDurationsAndCounts) {
  EXPECT_EQ(format_duration(45), "45s");
  EXPECT_EQ(format_duration(187), "3m07s");
  EXPECT_EQ(format_duration(7500), "2h05m");
  EXPECT_EQ(format_duration(3 * 86400 + 4 * 3600 + 10), "3d04h");
  EXPECT_EQ(format_duration(-1), "?");
  EXPECT_EQ(format_count(950), "950");
  EXPECT_EQ(format_count(18234), "18.2k");
  EXPECT_EQ(format_count(1350000), "1.35M");
}

TEST(Progress, LineShowsPositionRateAndEta) {
  Progress progress(100, 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  progress.update(60, 4000);
  EXPECT_GT(progress.tokens_per_second(), 0.0);
  // 40 units in t seconds -> 40 more units take about t seconds.
  EXPECT_GT(progress.eta_seconds(), 0.0);
  const std::string line = progress.line("step");
  EXPECT_THAT(line, ::testing::StartsWith("step 60/100 (60.0%) | "));
  EXPECT_THAT(line, ::testing::HasSubstr(" tok/s | "));
  EXPECT_THAT(line, ::testing::HasSubstr(" elapsed | ETA "));
}

TEST(Progress, EtaFollowsTheRecentPaceAndLinesComeOnTime) {
  auto now = Progress::Clock::time_point{};
  Progress progress(1000, 0, [&] { return now; });
  EXPECT_FALSE(progress.due(30));
  // A slow start: 10 steps in 100 s (10 s per step) ...
  now += std::chrono::seconds(100);
  progress.update(10, 0);
  EXPECT_TRUE(progress.due(30));
  EXPECT_NEAR(progress.eta_seconds(), 990 * 10.0, 1e-6);
  progress.line("step");
  EXPECT_FALSE(progress.due(30));
  // ... then 1 s per step: the average since the start would still say about 2.6 s per step.
  for (int64_t done = 110; done <= 410; done += 100) {
    now += std::chrono::seconds(100);
    progress.update(done, 0);
    progress.line("step");
  }
  EXPECT_LT(progress.eta_seconds(), 590 * 1.6);
  EXPECT_GT(progress.eta_seconds(), 590 * 1.0);
  EXPECT_DOUBLE_EQ(progress.elapsed_seconds(), 500.0);
}

} // namespace
} // namespace xl::run
