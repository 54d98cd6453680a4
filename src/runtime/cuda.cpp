#include "xl/runtime/cuda.h"

#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

namespace xl::runtime {

namespace {

c10::DeviceIndex index_of(const torch::Device& device) {
  TORCH_CHECK(device.is_cuda(), "a CUDA device was expected, got ", device);
  return device.has_index() && device.index() >= 0 ? device.index() : 0;
}

} // namespace

CudaAllocated cuda_allocated(const torch::Device& device) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(index_of(device));
  // [0]: the aggregate over the allocator's pools
  return {
      stats.allocated_bytes[0].current,
      stats.reserved_bytes[0].current,
      stats.allocated_bytes[0].peak,
      stats.reserved_bytes[0].peak};
}

void reset_cuda_peaks(const torch::Device& device) {
  c10::cuda::CUDACachingAllocator::resetPeakStats(index_of(device));
}

std::string cuda_device_name(const torch::Device& device) {
  return at::cuda::getDeviceProperties(index_of(device))->name;
}

int64_t cuda_total_memory(const torch::Device& device) {
  return static_cast<int64_t>(at::cuda::getDeviceProperties(index_of(device))->totalGlobalMem);
}

void set_cuda_device(const torch::Device& device) {
  c10::cuda::set_device(index_of(device));
}

} // namespace xl::runtime
