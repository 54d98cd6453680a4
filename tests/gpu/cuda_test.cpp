// CUDA twins: the model on the GPU agrees with the CPU, a bf16-autocast
// training step is finite and the memory-mode evaluation runs. Skipped without
// a CUDA device.
#include <gtest/gtest.h>

#include "xl/models/transformer_xl.h"
#include "xl/train/autocast.h"
#include "xl/train/optimizer.h"

namespace xl::models {
namespace {

TransformerXLOptions options() {
  Lengths lengths;
  lengths.mem_len = 12;
  lengths.same_length = true;
  lengths.clamp_len = 10;
  return TransformerXLOptions(500, 3, 4, 64, 16, 128)
      .cutoffs({50, 200})
      .div_val(2)
      .tie_projs({false, true, true})
      .lengths(lengths);
}

class Cuda : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!torch::cuda::is_available()) {
      GTEST_SKIP() << "no CUDA device";
    }
  }
};

TEST_F(Cuda, ForwardWithMemoryMatchesTheCpu) {
  torch::manual_seed(0);
  auto cpu = std::make_shared<TransformerXLImpl>(options());
  auto gpu = std::make_shared<TransformerXLImpl>(options());
  {
    torch::NoGradGuard no_grad;
    const auto source = cpu->parameters();
    auto dest = gpu->parameters();
    for (size_t i = 0; i < source.size(); ++i) {
      dest[i].copy_(source[i]);
    }
  }
  gpu->to(torch::kCUDA);
  cpu->eval();
  gpu->eval();
  torch::NoGradGuard no_grad;
  nn::Memory cpu_mems, gpu_mems;
  for (int s = 0; s < 3; ++s) {
    const auto input = torch::randint(500, {9, 4});
    const auto target = torch::randint(500, {9, 4});
    auto a = cpu->forward(input, target, cpu_mems, true);
    auto b = gpu->forward(input.cuda(), target.cuda(), gpu_mems, true);
    // TF32 may be on for CUDA matmuls: compare at a looser tolerance than CPU
    // parity.
    EXPECT_TRUE(torch::allclose(a.log_probs, b.log_probs.cpu(), 1e-3, 2e-3))
        << "segment " << s;
    cpu_mems = a.mems;
    gpu_mems = b.mems;
  }
}

TEST_F(Cuda, Bf16AutocastTrainingStepIsFinite) {
  torch::manual_seed(1);
  auto model = std::make_shared<TransformerXLImpl>(options());
  model->to(torch::kCUDA);
  config::TrainConfig t;
  auto optimizer = train::make_optimizer(t, model->parameters());
  nn::Memory mems;
  for (int step = 0; step < 3; ++step) {
    LMOutput out;
    {
      train::AutocastGuard autocast(torch::kCUDA, true);
      out = model->forward(
          torch::randint(500, {16, 4}).cuda(),
          torch::randint(500, {16, 4}).cuda(),
          mems);
    }
    ASSERT_TRUE(std::isfinite(out.nll_sum.item<double>()));
    optimizer->zero_grad();
    (out.nll_sum / out.count).backward();
    optimizer->step();
    mems = out.mems;
  }
  for (const auto& p : model->parameters()) {
    EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  }
}

} // namespace
} // namespace xl::models
