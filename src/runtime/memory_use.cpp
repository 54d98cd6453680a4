#include "xl/runtime/memory_use.h"

#include <malloc.h>

#include <fstream>
#include <string>

#include "xl/runtime/cpu_cache.h"
#include "xl/runtime/cuda.h"
#include "xl/util/units.h"

namespace xl::runtime {

namespace {

// VmRSS of /proc/self/status, in bytes (0 where the file lacks it).
double resident_bytes() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stod(line.substr(6)) * 1024.0;
    }
  }
  return 0.0;
}

} // namespace

MemoryUse memory_use(const torch::Device& device) {
  MemoryUse use;
  use.resident_mib = resident_bytes() / kMiB;
  const struct mallinfo2 heap = mallinfo2();
  const auto cache = cpu_cache_stats();
  use.cpu_cache_mib = static_cast<double>(cache.cached_bytes + cache.in_use_bytes) / kMiB;
  use.heap_mib = static_cast<double>(heap.arena + heap.hblkhd) / kMiB;
  use.heap_free_mib = static_cast<double>(heap.fordblks) / kMiB;
  use.cpu_allocators_mib = use.cpu_cache_mib + use.heap_mib;
  if (device.is_cuda()) {
    const auto allocated = cuda_allocated(device);
    use.cuda_allocated_mib = static_cast<double>(allocated.allocated) / kMiB;
    use.cuda_reserved_mib = static_cast<double>(allocated.reserved) / kMiB;
  }
  return use;
}

void add_memory_use(nlohmann::json& record, const MemoryUse& use, const torch::Device& device) {
  record["resident_mib"] = use.resident_mib;
  record["cpu_allocators_mib"] = use.cpu_allocators_mib;
  record["cpu_cache_mib"] = use.cpu_cache_mib;
  record["heap_mib"] = use.heap_mib;
  record["heap_free_mib"] = use.heap_free_mib;
  if (device.is_cuda()) {
    record["cuda_allocated_mib"] = use.cuda_allocated_mib;
    record["cuda_reserved_mib"] = use.cuda_reserved_mib;
  }
}

} // namespace xl::runtime
