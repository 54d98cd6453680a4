// The profiler's summary: what ran, how often and for how long, the longest first.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include <algorithm>

#include "xl/runtime/profile.h"

namespace xl::runtime {
namespace {

TEST(ProfileWork, ListsTheOperatorsThatRanWithTheirCallsLongestFirst) {
  const auto a = torch::randn({256, 256});
  const auto profile = profile_work(
      torch::kCPU,
      [&] {
        for (int i = 0; i < 3; ++i) {
          (void)torch::mm(a, a);
        }
        (void)torch::relu(a);
      },
      50);
  EXPECT_GT(profile.wall_ms, 0.0);
  EXPECT_EQ(profile.device_busy_ms, 0.0); // nothing ran on a device
  EXPECT_EQ(profile.device_activities, 0);
  const auto mm = std::find_if(
      profile.top.begin(), profile.top.end(), [](const auto& e) { return e.name == "aten::mm"; });
  ASSERT_NE(mm, profile.top.end());
  EXPECT_EQ(mm->calls, 3);
  EXPECT_GT(mm->ms, 0.0);
  EXPECT_TRUE(
      std::is_sorted(profile.top.begin(), profile.top.end(), [](const auto& x, const auto& y) {
        return x.ms > y.ms;
      }));
  // Only as many as asked for, and nothing from before or after the work.
  const auto two = profile_work(
      torch::kCPU, [&] { (void)torch::mm(a, a); }, 2);
  EXPECT_LE(two.top.size(), 2U);
  const auto none = profile_work(
      torch::kCPU, [] {}, 5);
  EXPECT_TRUE(none.top.empty());
}

} // namespace
} // namespace xl::runtime
