#include "xl/runtime/cpu_cache.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <list>
#include <mutex>
#include <unordered_map>

namespace xl::runtime {

namespace {

constexpr size_t kGranule = size_t{2} << 20;

struct Block {
  void* data;
  size_t size;
};

class CachingAllocator final : public c10::Allocator {
 public:
  explicit CachingAllocator(c10::Allocator* fallback)
      : fallback_(fallback), limit_(physical_memory() / 2) {}

  c10::DataPtr allocate(size_t n) override {
    if (n < kCpuCacheMinBlock) {
      return fallback_->allocate(n);
    }
    void* data = take(n);
    return {data, data, &CachingAllocator::release, c10::Device(c10::DeviceType::CPU)};
  }

  c10::DeleterFnPtr raw_deleter() const override {
    return &CachingAllocator::release;
  }

  void copy_data(void* dest, const void* src, size_t count) const override {
    default_copy_data(dest, src, count);
  }

  CpuCacheStats stats() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void release_cached() {
    const std::lock_guard<std::mutex> lock(mutex_);
    evict(0);
  }

  static CachingAllocator* instance;

 private:
  static size_t physical_memory() {
    const long pages = sysconf(_SC_PHYS_PAGES);
    const long page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page)
                                 : size_t{8} << 30;
  }

  // Small blocks come back here too (raw_deallocate of a fallback block), so the map of
  // live large blocks decides who frees.
  static void release(void* data) {
    instance->give_back(data);
  }

  // Requests round up to one of eight sizes per power of two (whole 2 MiB granules), so that
  // requests varying by a few percent from step to step (the rows that fall in a softmax
  // bin, or bf16 and float32 copies of them) share blocks instead of mapping new ones.
  static size_t block_size(size_t n) {
    size_t power = 1;
    while (power <= n / 2) {
      power <<= 1;
    }
    const size_t step = std::max(kGranule, power / 8);
    return (n + step - 1) / step * step;
  }

  void* take(size_t n) {
    const size_t size = block_size(n);
    const std::lock_guard<std::mutex> lock(mutex_);
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->size >= size && it->size - size <= it->size / 8 &&
          (best == free_.end() || it->size < best->size)) {
        best = it;
      }
    }
    Block block{};
    if (best != free_.end()) {
      block = *best;
      free_.erase(best);
      stats_.cached_bytes -= block.size;
      ++stats_.hits;
    } else {
      // Stay under the limit by unmapping cached blocks before mapping more.
      evict(limit_ > stats_.in_use_bytes + size ? limit_ - stats_.in_use_bytes - size : 0);
      block = {map(size), size};
      ++stats_.misses;
    }
    live_.emplace(block.data, block.size);
    stats_.in_use_bytes += block.size;
    return block.data;
  }

  void* map(size_t size) {
    const auto anonymous = [size] {
      return mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    };
    void* data = anonymous();
    if (data == MAP_FAILED && !free_.empty()) {
      evict(0);
      data = anonymous();
    }
    TORCH_CHECK_WITH(
        OutOfMemoryError,
        data != MAP_FAILED,
        "CPU allocator: cannot map ",
        size,
        " bytes (",
        stats_.in_use_bytes,
        " bytes of large blocks in use)");
    // Huge pages fault a block in 512 times less often; where the kernel does not offer them
    // this is a no-op.
    madvise(data, size, MADV_HUGEPAGE);
    return data;
  }

  void give_back(void* data) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      const auto it = live_.find(data);
      if (it != live_.end()) {
        const size_t size = it->second;
        live_.erase(it);
        stats_.in_use_bytes -= size;
        free_.push_back({data, size});
        stats_.cached_bytes += size;
        evict(limit_ > stats_.in_use_bytes ? limit_ - stats_.in_use_bytes : 0);
        return;
      }
    }
    fallback_->raw_deleter()(data);
  }

  // Unmaps the oldest cached blocks until at most `keep` bytes stay cached.
  void evict(size_t keep) {
    while (stats_.cached_bytes > keep && !free_.empty()) {
      const Block block = free_.front();
      free_.pop_front();
      munmap(block.data, block.size);
      stats_.cached_bytes -= block.size;
    }
  }

  c10::Allocator* fallback_;
  size_t limit_;
  std::mutex mutex_;
  std::list<Block> free_; // oldest first
  std::unordered_map<void*, size_t> live_;
  CpuCacheStats stats_;
};

CachingAllocator* CachingAllocator::instance = nullptr;

} // namespace

void install_cpu_cache() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Never destroyed: tensors freed during static destruction still find it.
    CachingAllocator::instance = new CachingAllocator(c10::GetDefaultCPUAllocator());
    c10::SetCPUAllocator(CachingAllocator::instance, /*priority=*/1);
  });
}

bool cpu_cache_installed() {
  return CachingAllocator::instance != nullptr;
}

CpuCacheStats cpu_cache_stats() {
  return cpu_cache_installed() ? CachingAllocator::instance->stats() : CpuCacheStats{};
}

void release_cpu_cache() {
  if (cpu_cache_installed()) {
    CachingAllocator::instance->release_cached();
  }
}

} // namespace xl::runtime
