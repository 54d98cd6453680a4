// The optimizer's CPU kernels over every parameter at once: the same numbers as LibTorch's
// per-tensor paths, for any number of threads and for tensors larger than one piece of work.
#include "xl/kernels/multi_tensor.h"

#include <gtest/gtest.h>

#include <torch/torch.h>

#include <cmath>

#include "xl/train/step.h"

namespace xl::kernels {
namespace {

// Sizes on both sides of a piece (2^15 elements), and an empty tensor.
std::vector<torch::Tensor> mixed_tensors() {
  torch::manual_seed(11);
  return {torch::randn({70001}), torch::randn({3, 4}), torch::empty({0}), torch::randn({32768})};
}

TEST(MultiTensor, SumOfSquaresAndScaleEqualLibTorchsForAnyThreadCount) {
  const auto tensors = mixed_tensors();
  double expected = 0.0;
  for (const auto& t : tensors) {
    expected += t.to(torch::kDouble).pow(2).sum().item<double>();
  }
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  const double one = cpu_sum_of_squares(tensors);
  at::set_num_threads(2);
  const double two = cpu_sum_of_squares(tensors);
  at::set_num_threads(threads);
  EXPECT_EQ(one, two);
  EXPECT_NEAR(one, expected, 1e-12 * expected);
  std::vector<torch::Tensor> scaled;
  for (const auto& t : tensors) {
    scaled.push_back(t.clone());
  }
  cpu_scale_(scaled, 0.37F);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_TRUE(torch::equal(scaled[i], tensors[i] * 0.37F)) << "tensor " << i;
  }
}

TEST(MultiTensor, ApplyOnlyToContiguousFloat32CpuTensors) {
  const auto x = torch::randn({4, 6});
  EXPECT_TRUE(cpu_multi_tensor_applies({{x}, {x.clone()}}));
  EXPECT_FALSE(cpu_multi_tensor_applies({{x}, {x.t()}}));
  EXPECT_FALSE(cpu_multi_tensor_applies({{x.to(torch::kDouble)}}));
  EXPECT_FALSE(cpu_multi_tensor_applies({{x}, {torch::Tensor()}}));
}

// Four steps with weight decay, against LibTorch's own Adam and AdamW on the same gradients.
TEST(MultiTensor, AdamStepEqualsLibTorchsAdamAndAdamW) {
  for (const bool decoupled : {false, true}) {
    const auto start = mixed_tensors();
    std::vector<torch::Tensor> ours, theirs, exp_avgs, exp_avg_sqs;
    for (const auto& t : start) {
      ours.push_back(t.clone());
      theirs.push_back(t.clone().requires_grad_());
      exp_avgs.push_back(torch::zeros_like(t));
      exp_avg_sqs.push_back(torch::zeros_like(t));
    }
    const AdamHyper h{0.01, 0.9, 0.98, 1e-8, 0.1, decoupled};
    std::unique_ptr<torch::optim::Optimizer> reference;
    if (decoupled) {
      reference = std::make_unique<torch::optim::AdamW>(
          theirs,
          torch::optim::AdamWOptions(h.lr)
              .betas({h.beta1, h.beta2})
              .eps(h.eps)
              .weight_decay(h.weight_decay));
    } else {
      reference = std::make_unique<torch::optim::Adam>(
          theirs,
          torch::optim::AdamOptions(h.lr)
              .betas({h.beta1, h.beta2})
              .eps(h.eps)
              .weight_decay(h.weight_decay));
    }
    for (int step = 1; step <= 4; ++step) {
      std::vector<torch::Tensor> grads;
      for (size_t i = 0; i < start.size(); ++i) {
        grads.push_back(torch::randn_like(start[i]));
        theirs[i].mutable_grad() = grads[i].clone();
      }
      cpu_adam_step(ours, grads, exp_avgs, exp_avg_sqs, std::vector<double>(start.size(), step), h);
      reference->step();
    }
    for (size_t i = 0; i < start.size(); ++i) {
      EXPECT_TRUE(torch::allclose(ours[i], theirs[i].detach(), 1e-6, 1e-6))
          << (decoupled ? "AdamW" : "Adam") << " tensor " << i << ": "
          << (ours[i] - theirs[i].detach()).abs().max().item<double>();
      // Four steps of lr 0.01 moved the weights well beyond the tolerance.
      if (start[i].numel() > 0) {
        EXPECT_GT((ours[i] - start[i]).abs().mean().item<double>(), 1e-3);
      }
    }
  }
}

// clip_gradients on the CPU kernels and on LibTorch's path (a double gradient) returns the norm
// before clipping and clips as clip_grad_norm_ does.
TEST(MultiTensor, ClipGradientsEqualsClipGradNorm) {
  for (const auto dtype : {torch::kFloat, torch::kDouble}) {
    for (const double clip : {0.0, 1.0, 1e6}) {
      std::vector<torch::Tensor> ours, theirs;
      for (const auto& t : mixed_tensors()) {
        ours.push_back(torch::zeros_like(t, dtype).requires_grad_());
        ours.back().mutable_grad() = t.to(dtype);
        theirs.push_back(torch::zeros_like(t, dtype).requires_grad_());
        theirs.back().mutable_grad() = t.to(dtype);
      }
      double expected = 0.0;
      for (const auto& p : theirs) {
        expected += p.grad().to(torch::kDouble).pow(2).sum().item<double>();
      }
      expected = std::sqrt(expected);
      const double norm = train::clip_gradients(ours, clip).item<double>();
      EXPECT_NEAR(norm, expected, 1e-6 * expected) << dtype << " clip " << clip;
      torch::nn::utils::clip_grad_norm_(theirs, clip > 0 ? clip : 1e30);
      for (size_t i = 0; i < ours.size(); ++i) {
        EXPECT_TRUE(torch::allclose(ours[i].grad(), theirs[i].grad(), 1e-6, 1e-7))
            << dtype << " clip " << clip << " tensor " << i;
      }
    }
  }
}

} // namespace
} // namespace xl::kernels
