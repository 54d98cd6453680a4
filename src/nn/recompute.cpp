#include "xl/nn/recompute.h"

#include <ATen/autocast_mode.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <utility>

#include "xl/runtime/autocast.h"
#include "xl/util/generator.h"

namespace xl::nn {

namespace {

using torch::autograd::variable_list;

// The default generator of a device: what dropout draws from.
at::Generator generator(const torch::Device& device) {
  return at::globalContext().defaultGenerator(device);
}

// The state of the default generators that a block's dropout draws from: the CPU one,
// and the CUDA one of the inputs' device.
struct RngState {
  torch::Tensor cpu;
  std::optional<torch::Device> cuda;
  torch::Tensor cuda_state;

  static RngState capture(const torch::Device& device) {
    RngState s;
    s.cpu = util::generator_state(generator(torch::kCPU));
    if (device.is_cuda()) {
      s.cuda = device;
      s.cuda_state = util::generator_state(generator(device));
    }
    return s;
  }

  void restore() const {
    util::set_generator_state(generator(torch::kCPU), cpu);
    if (cuda) {
      util::set_generator_state(generator(*cuda), cuda_state);
    }
  }
};

class CheckpointBackward : public torch::autograd::Node {
 public:
  CheckpointBackward(Block block, std::vector<torch::Tensor> inputs)
      : block_(std::move(block)),
        inputs_(std::move(inputs)),
        device_(inputs_.front().device()),
        rng_(RngState::capture(device_)),
        bf16_(at::autocast::is_autocast_enabled(device_.type())) {
    TORCH_CHECK(
        !bf16_ || at::autocast::get_autocast_dtype(device_.type()) == at::kBFloat16,
        "recompute: only bf16 autocast can be replayed, found ",
        at::autocast::get_autocast_dtype(device_.type()));
  }

  std::string name() const override {
    return "xl::nn::CheckpointBackward";
  }

  variable_list apply(variable_list&& grads) override {
    std::vector<torch::Tensor> leaves;
    leaves.reserve(inputs_.size());
    for (const auto& input : inputs_) {
      leaves.push_back(input.detach().requires_grad_(input.requires_grad()));
    }
    std::vector<torch::Tensor> outputs;
    {
      // Replay the forward's draws, then leave the generators where they were.
      const auto now = RngState::capture(device_);
      rng_.restore();
      torch::AutoGradMode grad_mode(true);
      runtime::AutocastGuard autocast(device_, bf16_);
      outputs = block_(leaves);
      now.restore();
    }
    TORCH_CHECK(
        outputs.size() == grads.size(),
        "recompute: the replayed block returned ",
        outputs.size(),
        " tensors, the forward ",
        grads.size());
    std::vector<torch::Tensor> roots;
    std::vector<torch::Tensor> root_grads;
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (grads[i].defined() && outputs[i].requires_grad()) {
        roots.push_back(outputs[i]);
        root_grads.push_back(grads[i]);
      }
    }
    if (!roots.empty()) {
      torch::autograd::backward(roots, root_grads);
    }
    variable_list input_grads;
    input_grads.reserve(leaves.size());
    for (const auto& leaf : leaves) {
      input_grads.push_back(leaf.requires_grad() ? leaf.grad() : torch::Tensor());
    }
    return input_grads;
  }

  void release_variables() override {
    inputs_.clear();
    block_ = nullptr;
  }

 private:
  Block block_;
  std::vector<torch::Tensor> inputs_;
  torch::Device device_;
  RngState rng_;
  bool bf16_;
};

} // namespace

std::vector<torch::Tensor> recompute(const Block& block, const std::vector<torch::Tensor>& inputs) {
  TORCH_CHECK(!inputs.empty(), "recompute: a block needs at least one input");
  bool records = false;
  for (const auto& input : inputs) {
    TORCH_CHECK(input.defined(), "recompute: every input must be defined");
    records = records || input.requires_grad();
  }
  if (!records || !torch::GradMode::is_enabled()) {
    return block(inputs);
  }
  // Capture the generators before the block draws from them.
  auto node = std::shared_ptr<CheckpointBackward>(
      new CheckpointBackward(block, inputs), torch::autograd::deleteNode);
  std::vector<torch::Tensor> outputs;
  {
    torch::NoGradGuard no_grad;
    outputs = block(inputs);
  }
  node->set_next_edges(torch::autograd::collect_next_edges(inputs));
  for (auto& output : outputs) {
    TORCH_CHECK(
        output.defined() && output.is_floating_point(),
        "recompute: a block's outputs must be defined floating-point tensors");
    torch::autograd::set_history(output, node);
  }
  return outputs;
}

} // namespace xl::nn
