// The memory figures of the training records follow what the process allocates.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "xl/runtime/cpu_cache.h"
#include "xl/runtime/memory_use.h"

namespace xl::runtime {
namespace {

TEST(MemoryUse, FollowsATensorsBytesAndReportsNoGpuOnTheCpu) {
  install_cpu_cache(); // as the apps do
  const auto before = memory_use(torch::kCPU);
  EXPECT_GT(before.resident_mib, 10.0); // LibTorch's code alone is more
  constexpr double kTensorMiB = 64.0;
  auto tensor = torch::ones({static_cast<int64_t>(kTensorMiB * 1024 * 1024 / 4)});
  const auto with = memory_use(torch::kCPU);
  // Held by an allocator, and resident: ones() wrote every page.
  EXPECT_GE(with.cpu_allocators_mib - before.cpu_allocators_mib, kTensorMiB - 1.0);
  EXPECT_GE(with.resident_mib - before.resident_mib, kTensorMiB - 1.0);
  // 64 MiB is above the cache's smallest block: the cache holds it, not glibc.
  EXPECT_GE(with.cpu_cache_mib - before.cpu_cache_mib, kTensorMiB - 1.0);
  EXPECT_EQ(with.cpu_allocators_mib, with.cpu_cache_mib + with.heap_mib);
  EXPECT_LE(with.heap_free_mib, with.heap_mib);
  EXPECT_EQ(with.cuda_allocated_mib, 0.0);
  EXPECT_EQ(with.cuda_reserved_mib, 0.0);
  nlohmann::json record;
  add_memory_use(record, with, torch::kCPU);
  EXPECT_EQ(record["resident_mib"].get<double>(), with.resident_mib);
  EXPECT_EQ(record["heap_mib"].get<double>(), with.heap_mib);
  EXPECT_EQ(record["cpu_cache_mib"].get<double>(), with.cpu_cache_mib);
  EXPECT_FALSE(record.contains("cuda_allocated_mib")) << record;
}

} // namespace
} // namespace xl::runtime
