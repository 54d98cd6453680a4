#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/cuda.h>

#include <mutex>

#include "xl/runtime/graph_state.h"

namespace xl::runtime {

using torch::autograd::variable_list;

namespace {

class Captured : public CudaGraphs {
 public:
  void replay_forward() override {
    forward->replay();
  }
  void replay_backward() override {
    backward->replay();
  }
  ~Captured() override {
    try {
      torch::cuda::synchronize(); // no replay may still read the buffers freed after this
    } catch (const c10::Error&) { // the device is gone (the process ends): nothing to wait for
    }
  }

  std::unique_ptr<at::cuda::CUDAGraph> forward;
  std::unique_ptr<at::cuda::CUDAGraph> backward;
};

// Holds autocast's cache off for the scope (the file header says why).
class AutocastCacheOff {
 public:
  AutocastCacheOff() : previous_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() {
    at::autocast::set_autocast_cache_enabled(previous_);
  }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool previous_;
};

// Ends a capture that an error left open on `stream`, so that the device works on eagerly.
void abort_capture(
    const c10::cuda::CUDAStream& stream,
    c10::DeviceIndex device,
    const at::cuda::MempoolId_t& pool) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream.stream(), &status) != cudaSuccess ||
      status == cudaStreamCaptureStatusNone) {
    return;
  }
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream.stream(), &graph);
  if (graph != nullptr) {
    cudaGraphDestroy(graph);
  }
  cudaGetLastError(); // the capture's error is reported by the caller's exception
  c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
}

// Runs fn (and its backward) once on `side` outside any capture: cuBLAS's workspace and lazy
// setup for that stream happen here. Learns which outputs carry gradient and makes the static
// buffers of their gradients.
void warm_up(GraphedBlock::State& s, const c10::cuda::CUDAStream& side, c10::DeviceIndex device) {
  torch::cuda::synchronize(device);
  variable_list warm;
  {
    const c10::cuda::CUDAStreamGuard on_side(side);
    warm = s.fn(s.in);
  }
  torch::cuda::synchronize(device);
  for (size_t k = 0; k < warm.size(); ++k) {
    if (s.with_grad && warm[k].requires_grad()) {
      s.grad_outputs.push_back(k);
    }
  }
  s.with_grad = !s.grad_outputs.empty();
  if (!s.with_grad) {
    return;
  }
  variable_list outs;
  for (const size_t k : s.grad_outputs) { // on the current stream, outside any graph's pool
    s.grad_out.push_back(at::zeros_like(warm[k]));
    outs.push_back(warm[k]);
  }
  const c10::cuda::CUDAStreamGuard on_side(side);
  s.differentiate(outs, s.grad_out);
  torch::cuda::synchronize(device);
}

// Captures fn's forward, and its backward when `s.with_grad`, on `side` into `pool`.
void record(
    GraphedBlock::State& s,
    Captured& graphs,
    const c10::cuda::CUDAStream& side,
    const at::cuda::MempoolId_t& pool) {
  const c10::cuda::CUDAStreamGuard on_side(side);
  graphs.forward = std::make_unique<at::cuda::CUDAGraph>();
  graphs.forward->capture_begin(pool);
  s.out = s.fn(s.in);
  graphs.forward->capture_end();
  if (s.with_grad) {
    variable_list outs;
    for (const size_t k : s.grad_outputs) {
      outs.push_back(s.out[k]);
    }
    graphs.backward = std::make_unique<at::cuda::CUDAGraph>();
    graphs.backward->capture_begin(pool);
    s.grad_in = torch::autograd::grad(outs, s.targets(), s.grad_out, false, false, true);
    graphs.backward->capture_end();
  }
}

// Warms up and captures on a side stream. The random state is restored after the warm-up (and
// after a failure), so that the replays draw what eager calls would.
void capture(GraphedBlock::State& s, Captured& graphs) {
  const auto device = s.in.front().device();
  const c10::cuda::CUDAGuard device_guard(device);
  const AutocastCacheOff cache_off;
  auto generator = at::cuda::detail::getDefaultCUDAGenerator(device.index());
  at::Tensor random_state;
  {
    const std::lock_guard<std::mutex> lock(generator.mutex());
    random_state = generator.get_state();
  }
  const auto restore_random_state = [&] {
    const std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(random_state);
  };
  const auto side = c10::cuda::getStreamFromPool(false, device.index());
  const auto pool = at::cuda::graph_pool_handle();
  try {
    warm_up(s, side, device.index());
    restore_random_state();
    record(s, graphs, side, pool);
    torch::cuda::synchronize(device.index());
  } catch (...) {
    abort_capture(side, device.index(), pool);
    restore_random_state();
    throw;
  }
}

} // namespace

std::unique_ptr<CudaGraphs> capture_cuda(GraphedBlock::State& s) {
  auto graphs = std::make_unique<Captured>();
  capture(s, *graphs);
  return graphs;
}

} // namespace xl::runtime
