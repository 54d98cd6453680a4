// What the process holds in memory now, as the training records report it (metrics.jsonl,
// TensorBoard's train/*_mib curves): the resident set, the memory the CPU allocators hold
// from the system (glibc's heap and mappings, xl's large-block cache: the bound of the
// resident set's part that tensors use, whatever share of it has been touched yet), and on a
// GPU what the caching allocator has handed out and reserved.
#pragma once

#include <torch/types.h>

#include <nlohmann/json.hpp>

namespace xl::runtime {

struct MemoryUse {
  double resident_mib = 0;
  /// glibc's arenas and mmapped blocks, and xl's CPU cache (cached and in use): their sum
  double cpu_allocators_mib = 0;
  /// xl's CPU cache alone: the large blocks in use and those kept for reuse
  double cpu_cache_mib = 0;
  /// glibc's part (arenas and mmapped blocks), and the free bytes inside its arenas
  double heap_mib = 0;
  double heap_free_mib = 0;
  /// the CUDA caching allocator's current bytes in tensors and reserved (0 on the CPU)
  double cuda_allocated_mib = 0;
  double cuda_reserved_mib = 0;
};

/// The memory use now; `device`: where the CUDA figures come from (none for the CPU).
MemoryUse memory_use(const torch::Device& device);

/// Adds the figures to a metrics record (the CUDA ones for a CUDA device only).
void add_memory_use(nlohmann::json& record, const MemoryUse& use, const torch::Device& device);

} // namespace xl::runtime
