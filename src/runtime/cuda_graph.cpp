#include "xl/runtime/cuda_graph.h"

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/cuda.h>

#include <mutex>
#include <utility>

#include "xl/runtime/op_counter.h"

namespace xl::runtime {

using torch::autograd::variable_list;

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
  std::unique_ptr<at::cuda::CUDAGraph> forward;
  std::unique_ptr<at::cuda::CUDAGraph> backward;
  /// forwards run so far: a backward belongs to the last one
  int64_t generation = 0;

  ~State() {
    if (replay == GraphReplay::kCuda && forward) {
      try {
        torch::cuda::synchronize(); // no replay may still read the buffers freed here
      } catch (const c10::Error&) { // the device is gone (the process ends): nothing to wait for
      }
    }
  }

  // What a backward differentiates: the grad inputs' buffers and the parameters.
  variable_list targets() const {
    variable_list t;
    for (const size_t i : grad_inputs) {
      t.push_back(in[i]);
    }
    t.insert(t.end(), params.begin(), params.end());
    return t;
  }

  void copy_inputs(const std::vector<at::Tensor>& inputs) const {
    TORCH_CHECK(
        inputs.size() == in.size(),
        "a graphed block of ",
        in.size(),
        " inputs called with ",
        inputs.size());
    const at::NoGradGuard no_grad;
    for (size_t i = 0; i < in.size(); ++i) {
      TORCH_CHECK(
          inputs[i].sizes() == in[i].sizes() && inputs[i].scalar_type() == in[i].scalar_type(),
          "a graphed block's input ",
          i,
          " is ",
          inputs[i].sizes(),
          " ",
          inputs[i].scalar_type(),
          ", captured for ",
          in[i].sizes(),
          " ",
          in[i].scalar_type());
      if (!inputs[i].is_same(in[i])) {
        in[i].copy_(inputs[i]);
      }
    }
  }

  // grads[k] for out[grad_outputs[k]] -> the gradients of targets() (undefined where unused).
  variable_list differentiate(const variable_list& outs, const variable_list& grads) const {
    variable_list seeds;
    for (size_t k = 0; k < grad_outputs.size(); ++k) {
      const auto& g = grads[k];
      seeds.push_back(g.defined() ? g : at::zeros_like(outs[k]));
    }
    return torch::autograd::grad(outs, targets(), seeds, false, false, true);
  }
};

namespace {

// The node of one forward's outputs. Edges: the caller's inputs that need gradients, then the
// parameters.
class GraphedBackward : public torch::autograd::Node {
 public:
  std::shared_ptr<GraphedBlock::State> state;
  int64_t generation = 0;
  /// emulated: this call's outputs that carry gradient, with their autograd history
  variable_list outs;

  std::string name() const override {
    return "GraphedBackward";
  }

  void release_variables() override {
    outs.clear();
  }

  variable_list apply(variable_list&& grads) override {
    auto& s = *state;
    TORCH_CHECK(
        generation == s.generation,
        "a graphed block ran its forward again before the backward of an earlier one: its saved "
        "activations are gone (run each forward's backward before the next forward)");
    count_graph_replay();
    if (s.replay == GraphReplay::kEmulated) {
      const GraphedRegion region;
      auto result = s.differentiate(outs, grads);
      outs.clear();
      return result;
    }
    {
      const at::NoGradGuard no_grad;
      for (size_t k = 0; k < s.grad_out.size(); ++k) {
        if (grads[k].defined()) {
          s.grad_out[k].copy_(grads[k]);
        } else {
          s.grad_out[k].zero_();
        }
      }
    }
    s.backward->replay();
    variable_list result;
    for (const auto& g : s.grad_in) {
      result.push_back(g.defined() ? g.detach() : g);
    }
    return result;
  }
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
    const c10::cuda::CUDAStream& side,
    const at::cuda::MempoolId_t& pool) {
  const c10::cuda::CUDAStreamGuard on_side(side);
  s.forward = std::make_unique<at::cuda::CUDAGraph>();
  s.forward->capture_begin(pool);
  s.out = s.fn(s.in);
  s.forward->capture_end();
  if (s.with_grad) {
    variable_list outs;
    for (const size_t k : s.grad_outputs) {
      outs.push_back(s.out[k]);
    }
    s.backward = std::make_unique<at::cuda::CUDAGraph>();
    s.backward->capture_begin(pool);
    s.grad_in = torch::autograd::grad(outs, s.targets(), s.grad_out, false, false, true);
    s.backward->capture_end();
  }
}

// Warms up and captures on a side stream. The random state is restored after the warm-up (and
// after a failure), so that the replays draw what eager calls would.
void capture(GraphedBlock::State& s) {
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
    record(s, side, pool);
    torch::cuda::synchronize(device.index());
  } catch (...) {
    abort_capture(side, device.index(), pool);
    restore_random_state();
    throw;
  }
}

} // namespace

GraphedBlock::GraphedBlock(
    GraphReplay replay,
    GraphFn fn,
    const std::vector<at::Tensor>& params,
    const std::vector<at::Tensor>& inputs)
    : state_(std::make_shared<State>()) {
  auto& s = *state_;
  s.replay = replay;
  s.fn = std::move(fn);
  TORCH_CHECK(!inputs.empty(), "a graphed block needs at least one input");
  bool any_grad = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK(inputs[i].defined(), "a graphed block's input ", i, " is undefined");
    const at::NoGradGuard no_grad;
    s.in.push_back(inputs[i].detach().clone());
    if (inputs[i].requires_grad()) {
      s.grad_inputs.push_back(i);
      any_grad = true;
    }
  }
  for (const auto& p : params) {
    if (p.requires_grad()) {
      s.params.push_back(p);
      any_grad = true;
    }
  }
  s.with_grad = at::GradMode::is_enabled() && any_grad;
  if (s.with_grad) {
    for (const size_t i : s.grad_inputs) {
      s.in[i].requires_grad_(true);
    }
  } else {
    s.grad_inputs.clear();
    s.params.clear();
  }
  if (replay == GraphReplay::kCuda) {
    TORCH_CHECK(
        s.in.front().is_cuda(),
        "a CUDA graph needs CUDA tensors, got one on ",
        s.in.front().device());
    capture(s);
  }
}

GraphedBlock::~GraphedBlock() = default;

std::vector<at::Tensor> GraphedBlock::operator()(const std::vector<at::Tensor>& inputs) {
  auto& s = *state_;
  s.copy_inputs(inputs);
  ++s.generation;
  variable_list outs;
  count_graph_replay();
  if (s.replay == GraphReplay::kCuda) {
    s.forward->replay();
    outs = s.out;
  } else {
    {
      const GraphedRegion region;
      outs = s.fn(s.in);
    }
    s.grad_outputs.clear();
    for (size_t k = 0; k < outs.size(); ++k) {
      if (s.with_grad && outs[k].requires_grad()) {
        s.grad_outputs.push_back(k);
      }
    }
  }
  std::vector<at::Tensor> result;
  result.reserve(outs.size());
  for (const auto& o : outs) {
    result.push_back(o.detach());
  }
  if (!s.with_grad || s.grad_outputs.empty()) {
    return result;
  }
  auto node = std::shared_ptr<GraphedBackward>(new GraphedBackward(), torch::autograd::deleteNode);
  node->state = state_;
  node->generation = s.generation;
  variable_list edges;
  for (const size_t i : s.grad_inputs) {
    edges.push_back(inputs[i]);
  }
  edges.insert(edges.end(), s.params.begin(), s.params.end());
  node->set_next_edges(torch::autograd::collect_next_edges(edges));
  for (const size_t k : s.grad_outputs) {
    if (s.replay == GraphReplay::kEmulated) {
      node->outs.push_back(outs[k]);
    }
    torch::autograd::set_history(result[k], node);
  }
  return result;
}

std::string graph_signature(const std::string& key, const std::vector<at::Tensor>& inputs) {
  std::string sig = key;
  for (const auto& t : inputs) {
    if (!t.defined()) {
      sig += "|-";
      continue;
    }
    sig += fmt::format(
        "|{}:{}:{}:{}",
        fmt::join(t.sizes(), "x"),
        c10::toString(t.scalar_type()),
        t.device().str(),
        t.requires_grad() ? "g" : "");
  }
  const auto autocast = [](c10::DeviceType type) {
    return at::autocast::is_autocast_enabled(type)
        ? std::string(c10::toString(at::autocast::get_autocast_dtype(type)))
        : std::string("off");
  };
  sig += fmt::format(
      "|grad:{}|autocast:{},{}",
      at::GradMode::is_enabled(),
      autocast(c10::DeviceType::CPU),
      autocast(c10::DeviceType::CUDA));
  return sig;
}

GraphCache::GraphCache(GraphReplay replay, size_t max_graphs)
    : replay_(replay), max_graphs_(std::max<size_t>(max_graphs, 1)) {}

std::vector<at::Tensor> GraphCache::run(
    const std::string& key,
    const GraphFn& fn,
    const GraphParams& params,
    const std::vector<at::Tensor>& inputs) {
  const auto sig = graph_signature(key, inputs);
  for (auto it = graphs_.begin(); it != graphs_.end(); ++it) {
    if (it->first == sig) {
      graphs_.splice(graphs_.begin(), graphs_, it);
      return (*graphs_.front().second)(inputs);
    }
  }
  if (failed_) {
    return fn(inputs);
  }
  std::unique_ptr<GraphedBlock> block;
  try {
    block = std::make_unique<GraphedBlock>(replay_, fn, params(), inputs);
  } catch (const c10::Error& e) {
    failed_ = true;
    spdlog::warn(
        "CUDA graphs: a capture failed, so this model runs eagerly from here, with the same "
        "numbers (train.cuda_graphs=false skips the attempt): {}",
        e.what_without_backtrace());
    return fn(inputs);
  }
  if (graphs_.size() >= max_graphs_) {
    graphs_.pop_back();
  }
  graphs_.emplace_front(sig, std::move(block));
  ++captures_;
  return (*graphs_.front().second)(inputs);
}

} // namespace xl::runtime
