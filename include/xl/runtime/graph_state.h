// The inside of runtime/cuda_graph.h that its two halves share: a graphed block's state (its
// function, static buffers and gradients), and the CUDA half's interface. cuda_graph.cpp holds
// the emulation, the autograd node and the cache; cuda_graph_capture.cpp, compiled only when
// LibTorch has CUDA, the capture and the replays (without CUDA, cuda_graph_no_cuda.cpp refuses).
#pragma once

#include <torch/csrc/autograd/function.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "xl/runtime/cuda_graph.h"

namespace xl::runtime {

/// A block's forward and backward captured as CUDA graphs.
class CudaGraphs {
 public:
  virtual ~CudaGraphs() = default;
  virtual void replay_forward() = 0;
  virtual void replay_backward() = 0;
};

struct GraphedBlock::State {
  GraphReplay replay = GraphReplay::kEmulated;
  GraphFn fn;
  std::vector<at::Tensor> params;
  bool with_grad = false;
  /// the inputs' buffers; those of inputs that need gradients are leaves that require grad
  std::vector<at::Tensor> in;
  std::vector<size_t> grad_inputs; // indices of `in` that require grad
  std::vector<at::Tensor> out;
  std::vector<size_t> grad_outputs; // indices of `out` that carry gradient
  /// CUDA: the gradients of grad_outputs the backward graph reads, and of [grad inputs, params]
  /// it writes (undefined where fn does not depend on one)
  std::vector<at::Tensor> grad_out;
  std::vector<at::Tensor> grad_in;
  /// kCuda: the captured graphs
  std::unique_ptr<CudaGraphs> cuda;
  /// forwards run so far: a backward belongs to the last one
  int64_t generation = 0;

  // What a backward differentiates: the grad inputs' buffers and the parameters.
  torch::autograd::variable_list targets() const;

  void copy_inputs(const std::vector<at::Tensor>& inputs) const;

  // grads[k] for out[grad_outputs[k]] -> the gradients of targets() (undefined where unused).
  torch::autograd::variable_list differentiate(
      const torch::autograd::variable_list& outs,
      const torch::autograd::variable_list& grads) const;
};

/// Warms `state.fn` up and captures it (and its backward, with gradients) on a side stream,
/// filling the state's outputs and gradient buffers; the random state is left as found.
std::unique_ptr<CudaGraphs> capture_cuda(GraphedBlock::State& state);

} // namespace xl::runtime
