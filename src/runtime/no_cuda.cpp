// runtime/cuda.h and the CUDA half of runtime/cuda_graph.h for a LibTorch without CUDA: no CUDA
// device is ever picked (runtime/device.h), and graphs are emulated only.
#include "xl/runtime/cuda.h"
#include "xl/runtime/graph_state.h"

namespace xl::runtime {

namespace {

[[noreturn]] void no_cuda(const char* what) {
  TORCH_CHECK(false, "this LibTorch has no CUDA: ", what);
}

} // namespace

CudaAllocated cuda_allocated(const torch::Device& /*device*/) {
  no_cuda("no CUDA allocator");
}

void reset_cuda_peaks(const torch::Device& /*device*/) {
  no_cuda("no CUDA allocator");
}

std::string cuda_device_name(const torch::Device& /*device*/) {
  no_cuda("no CUDA device");
}

int64_t cuda_total_memory(const torch::Device& /*device*/) {
  no_cuda("no CUDA device");
}

void set_cuda_device(const torch::Device& /*device*/) {
  no_cuda("no CUDA device");
}

std::unique_ptr<CudaGraphs> capture_cuda(GraphedBlock::State& /*state*/) {
  no_cuda("a graphed block can only be emulated");
}

} // namespace xl::runtime
