#include "xl/runtime/cuda_graph.h"

#include <ATen/autocast_mode.h>
#include <fmt/format.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <atomic>
#include <utility>

#include "xl/runtime/graph_state.h"
#include "xl/util/log.h"

namespace xl::runtime {

using torch::autograd::variable_list;

variable_list GraphedBlock::State::targets() const {
  variable_list t;
  for (const size_t i : grad_inputs) {
    t.push_back(in[i]);
  }
  t.insert(t.end(), params.begin(), params.end());
  return t;
}

void GraphedBlock::State::copy_inputs(const std::vector<at::Tensor>& inputs) const {
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

variable_list GraphedBlock::State::differentiate(
    const variable_list& outs,
    const variable_list& grads) const {
  variable_list seeds;
  for (size_t k = 0; k < grad_outputs.size(); ++k) {
    const auto& g = grads[k];
    seeds.push_back(g.defined() ? g : at::zeros_like(outs[k]));
  }
  return torch::autograd::grad(outs, targets(), seeds, false, false, true);
}

namespace {

// The hooks, each read where it is called (set_graph_hooks may run on another thread).
struct InstalledHooks {
  std::atomic<void (*)()> replayed{nullptr};
  std::atomic<void (*)()> emulation_begins{nullptr};
  std::atomic<void (*)()> emulation_ends{nullptr};
};

InstalledHooks& hooks() {
  static InstalledHooks installed;
  return installed;
}

void call(const std::atomic<void (*)()>& hook) {
  if (const auto f = hook.load()) {
    f();
  }
}

void replayed() {
  call(hooks().replayed);
}

// The emulated run of a block's operators, told to the hooks.
class Emulation {
 public:
  Emulation() {
    call(hooks().emulation_begins);
  }
  ~Emulation() {
    call(hooks().emulation_ends);
  }
  Emulation(const Emulation&) = delete;
  Emulation& operator=(const Emulation&) = delete;
};

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
    replayed();
    if (s.replay == GraphReplay::kEmulated) {
      const Emulation emulation;
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
    s.cuda->replay_backward();
    variable_list result;
    for (const auto& g : s.grad_in) {
      result.push_back(g.defined() ? g.detach() : g);
    }
    return result;
  }
};

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
    s.cuda = capture_cuda(s);
  }
}

GraphedBlock::~GraphedBlock() = default;

std::vector<at::Tensor> GraphedBlock::operator()(const std::vector<at::Tensor>& inputs) {
  auto& s = *state_;
  s.copy_inputs(inputs);
  ++s.generation;
  variable_list outs;
  replayed();
  if (s.replay == GraphReplay::kCuda) {
    s.cuda->replay_forward();
    outs = s.out;
  } else {
    {
      const Emulation emulation;
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

void set_graph_hooks(const GraphHooks& h) {
  hooks().replayed = h.replayed;
  hooks().emulation_begins = h.emulation_begins;
  hooks().emulation_ends = h.emulation_ends;
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
    logger().warn(
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
