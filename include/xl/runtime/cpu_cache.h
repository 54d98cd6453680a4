// A CPU allocator for LibTorch that keeps large blocks mapped between uses.
//
// glibc serves blocks above its mmap threshold (32 MiB at most) with a fresh mapping and unmaps
// them on free, so a training step whose temporaries are hundreds of MB page-faults all of them
// in again, zeroed by the kernel, every step. This allocator caches freed large blocks and hands
// them out again; smaller blocks go to LibTorch's own allocator (glibc's heap).
#pragma once

#include <cstddef>

namespace xl::runtime {

struct CpuCacheStats {
  size_t cached_bytes = 0; // free large blocks kept for reuse
  size_t in_use_bytes = 0; // large blocks handed out
  size_t hits = 0;         // large requests served from the cache
  size_t misses = 0;       // large requests that mapped new memory
};

/// Smallest request the cache serves: glibc's largest mmap threshold.
constexpr size_t kCpuCacheMinBlock = size_t{32} << 20;

/// Makes LibTorch's CPU allocator one that serves requests of at least kCpuCacheMinBlock bytes
/// from mappings rounded up to one of eight sizes per power of two (whole 2 MiB granules) and
/// kept after they are freed. A freed block is reused for a request that wastes at most an
/// eighth of it. Cached and used large blocks together stay under half of physical memory: the
/// oldest cached blocks are unmapped first. Idempotent.
void install_cpu_cache();
/// Whether install_cpu_cache() has run in this process.
bool cpu_cache_installed();
CpuCacheStats cpu_cache_stats();
/// Unmaps every cached free block.
void release_cpu_cache();

} // namespace xl::runtime
