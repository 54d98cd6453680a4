#include "xl/runtime/cpu_cache.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace xl::runtime {
namespace {

TEST(CpuCache, ReusesFreedLargeBlocksAndLeavesSmallOnesToTheHeap) {
  install_cpu_cache();
  ASSERT_TRUE(cpu_cache_installed());
  release_cpu_cache();
  const int64_t floats = static_cast<int64_t>(kCpuCacheMinBlock / sizeof(float)) + 1000;
  const auto before = cpu_cache_stats();
  void* first = nullptr;
  {
    auto t = torch::full({floats}, 3.0f);
    first = t.data_ptr();
    EXPECT_EQ(cpu_cache_stats().misses, before.misses + 1);
    EXPECT_GE(cpu_cache_stats().in_use_bytes, before.in_use_bytes + kCpuCacheMinBlock);
  }
  EXPECT_GE(cpu_cache_stats().cached_bytes, kCpuCacheMinBlock);
  {
    // A slightly larger request fits the freed block; its old contents are overwritten.
    auto t = torch::full({floats + 4096}, 2.0f);
    EXPECT_EQ(t.data_ptr(), first);
    EXPECT_EQ(cpu_cache_stats().hits, before.hits + 1);
    EXPECT_EQ(t.sum().item<double>(), 2.0 * static_cast<double>(floats + 4096));
  }
  {
    // Requests round up to eight sizes per power of two: one 6% larger takes the same block.
    auto t = torch::empty({floats * 106 / 100});
    EXPECT_EQ(t.data_ptr(), first);
    EXPECT_EQ(cpu_cache_stats().hits, before.hits + 2);
  }
  {
    // A request more than an eighth larger than the freed block maps a new one.
    auto larger = torch::empty({floats * 5 / 4});
    EXPECT_NE(larger.data_ptr(), first);
    EXPECT_EQ(cpu_cache_stats().misses, before.misses + 2);
  }
  const auto after = cpu_cache_stats();
  auto small = torch::ones({1024});
  EXPECT_EQ(cpu_cache_stats().hits, after.hits);
  EXPECT_EQ(cpu_cache_stats().misses, after.misses);
  release_cpu_cache();
  EXPECT_EQ(cpu_cache_stats().cached_bytes, 0U);
  EXPECT_EQ(cpu_cache_stats().in_use_bytes, before.in_use_bytes);
}

} // namespace
} // namespace xl::runtime
