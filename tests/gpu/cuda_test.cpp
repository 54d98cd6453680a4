// CUDA twins: the model on the GPU agrees with the CPU, a bf16-autocast training step through the
// shared step is finite, and the evaluator runs. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include "xl/config/schema.h"
#include "xl/models/transformer_xl/model.h"
#include "xl/runtime/device.h"
#include "xl/train/optimizer.h"
#include "xl/train/step.h"

namespace xl::models {
namespace {

TransformerXLOptions options(double dropout = 0.0) {
  TransformerXLLengths lengths;
  lengths.mem_len = 12;
  lengths.same_length = true;
  lengths.clamp_len = 10;
  return TransformerXLOptions(
             3,
             nn::DecoderLayerOptions(
                 nn::AttentionOptions(64, 4, 16).dropout(dropout).dropatt(dropout), 128),
             nn::AdaptiveSoftmaxOptions(
                 nn::AdaptiveOptions(500, 64, 64).cutoffs({50, 200}).div_val(2))
                 .tie_projs({false, true, true}))
      .lengths(lengths);
}

sources::Batch random_batch(int64_t len, int64_t rows) {
  sources::Batch batch;
  batch.tokens = torch::randint(500, {len, rows});
  batch.targets = torch::randint(500, {len, rows});
  batch.n_targets = batch.targets.numel();
  return batch;
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
  ForwardArgs args;
  args.log_probs = true;
  nn::Memory cpu_mems, gpu_mems;
  for (int s = 0; s < 3; ++s) {
    const auto batch = random_batch(9, 4);
    auto a = cpu->forward(batch, cpu_mems, args);
    auto b = gpu->forward(batch.to(torch::kCUDA), gpu_mems, args);
    // TF32 may be on for CUDA matmuls: compare at a looser tolerance than CPU parity.
    EXPECT_TRUE(torch::allclose(a.log_probs, b.log_probs.cpu(), 1e-3, 2e-3)) << "segment " << s;
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
  train::StepOptions step_options;
  step_options.chunks = 2;
  step_options.bf16 = true;
  step_options.device = torch::kCUDA;
  std::vector<nn::Memory> mems(2);
  for (int step = 1; step <= 3; ++step) {
    const auto result = train::read_step(train::train_step(
        *model, *optimizer, random_batch(16, 4), true, mems, 1e-3, step, step_options));
    ASSERT_TRUE(result.finite);
  }
  for (const auto& p : model->parameters()) {
    EXPECT_TRUE(torch::isfinite(p).all().item<bool>());
  }
}

// The replay of a checkpointed layer runs under the forward's bf16 autocast and draws the
// forward's CUDA dropout masks: the gradients are the plain path's.
TEST_F(Cuda, CheckpointedBf16StepGivesThePlainGradients) {
  torch::manual_seed(2);
  const auto batch = random_batch(16, 4);
  std::vector<std::vector<torch::Tensor>> grads;
  for (const bool checkpointed : {false, true}) {
    torch::manual_seed(3);
    torch::cuda::manual_seed_all(3);
    auto model = std::make_shared<TransformerXLImpl>(options(0.2).checkpoint_layers(checkpointed));
    model->to(torch::kCUDA);
    model->train();
    config::TrainConfig t;
    auto optimizer = train::make_optimizer(t, model->parameters());
    train::StepOptions step_options;
    step_options.bf16 = true;
    step_options.device = torch::kCUDA;
    std::vector<nn::Memory> mems(1);
    ASSERT_TRUE(train::read_step(
                    train::train_step(*model, *optimizer, batch, true, mems, 1e-3, 1, step_options))
                    .finite);
    grads.emplace_back();
    for (const auto& p : model->parameters()) {
      grads.back().push_back(p.grad().cpu());
    }
  }
  for (size_t i = 0; i < grads[0].size(); ++i) {
    EXPECT_TRUE(torch::allclose(grads[0][i], grads[1][i], 1e-3, 1e-5)) << "parameter " << i;
  }
}

} // namespace
} // namespace xl::models
