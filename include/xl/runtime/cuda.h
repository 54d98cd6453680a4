// The CUDA device's facts and its caching allocator's figures, behind one header: the rest of
// xl includes no CUDA header (scripts/check-layers.py allows them in the runtime files that
// talk to CUDA alone). Each call takes a CUDA device; an index < 0 is device 0.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace xl::runtime {

/// The caching allocator's bytes in tensors and reserved from the device: now, and their
/// peaks since reset_cuda_peaks.
struct CudaAllocated {
  int64_t allocated = 0;
  int64_t reserved = 0;
  int64_t peak_allocated = 0;
  int64_t peak_reserved = 0;
};

CudaAllocated cuda_allocated(const torch::Device& device);
void reset_cuda_peaks(const torch::Device& device);

/// The device's name ("NVIDIA H200") and its memory in bytes.
std::string cuda_device_name(const torch::Device& device);
int64_t cuda_total_memory(const torch::Device& device);

/// Makes `device` the current device of this thread.
void set_cuda_device(const torch::Device& device);

} // namespace xl::runtime
