// CUDA twins: the model on the GPU agrees with the CPU, a bf16-autocast training step through the
// shared step is finite, the fused Transformer-XL layer agrees with the composed one, a step
// never makes the host wait, CUDA graphs give the eager numbers, and the profiler sees the
// kernels. Skipped without a CUDA device.
#include <gtest/gtest.h>

#include "xl/config/schema.h"
#include "xl/eval/evaluator.h"
#include "xl/models/layer_stack.h"
#include "xl/models/transformer_xl/model.h"
#include "xl/nn/masks.h"
#include "xl/nn/rel_decoder_layer.h"
#include "xl/runtime/autocast.h"
#include "xl/runtime/device.h"
#include "xl/runtime/memory_use.h"
#include "xl/runtime/op_counter.h"
#include "xl/runtime/profile.h"
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
             {3,
              nn::DecoderLayerOptions(
                  nn::AttentionOptions(64, 4, 16).dropout(dropout).dropatt(dropout), 128)},
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
    auto checkpointing = options(0.2);
    checkpointing.stack().checkpoint_layers(checkpointed);
    auto model = std::make_shared<TransformerXLImpl>(checkpointing);
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

// Between logging steps nothing is read from the device and nothing uploaded that waits: the
// batch and the adaptive softmax's bins go up from page-locked memory.
TEST_F(Cuda, TrainingStepsNeverWaitForTheDevice) {
  torch::manual_seed(4);
  auto model = std::make_shared<TransformerXLImpl>(options(0.1));
  model->to(torch::kCUDA);
  model->train();
  config::TrainConfig t;
  auto optimizer = train::make_optimizer(t, model->parameters());
  train::StepOptions step_options;
  step_options.clip = 0.25;
  step_options.device = torch::kCUDA;
  std::vector<nn::Memory> mems(1);
  std::vector<train::StepResult> results;
  for (int step = 1; step <= 4; ++step) {
    const auto batch = random_batch(12, 4);
    runtime::OpCounts counts;
    {
      const runtime::OpCounter counter;
      results.push_back(
          train::train_step(*model, *optimizer, batch, true, mems, 1e-3, step, step_options));
      counts = counter.counts();
    }
    if (step > 1) { // the first step of a stream reads whether it kept its (empty) memory
      EXPECT_EQ(counts.host_reads, 0) << "step " << step;
      EXPECT_EQ(counts.blocking_uploads, 0) << "step " << step;
    }
  }
  for (const auto& report : train::read_steps(results)) {
    EXPECT_TRUE(report.finite);
    EXPECT_GT(report.grad_norm, 0.0);
  }
}

// Training steps (dropout on) and a memory evaluation with the layer stack captured as CUDA
// graphs, against the same eagerly: the same losses, weights and random stream after them, in
// float32 and under bf16 autocast, with nothing read from the device in a graphed step.
TEST_F(Cuda, GraphedStepsGiveTheEagerNumbers) {
  struct Run {
    std::vector<double> sums;
    std::vector<torch::Tensor> weights;
    double eval_loss = 0.0;
    torch::Tensor next_draws;
    int64_t host_reads = 0;
  };
  std::vector<sources::Batch> batches;
  torch::manual_seed(6);
  for (int i = 0; i < 6; ++i) {
    batches.push_back(random_batch(12, 4));
  }
  const auto run = [&](bool graphs, bool bf16) {
    torch::manual_seed(7);
    auto model = std::make_shared<TransformerXLImpl>(options(0.1));
    model->to(torch::kCUDA);
    model->train();
    EXPECT_EQ(
        models::use_graphs(
            *model, graphs ? std::optional(runtime::GraphReplay::kCuda) : std::nullopt),
        "");
    config::TrainConfig t;
    auto optimizer = train::make_optimizer(t, model->parameters());
    train::StepOptions step_options;
    step_options.clip = 0.25;
    step_options.bf16 = bf16;
    step_options.device = torch::kCUDA;
    std::vector<nn::Memory> mems(1);
    std::vector<train::StepResult> results;
    Run out;
    for (size_t step = 0; step < batches.size(); ++step) {
      const runtime::OpCounter counter;
      results.push_back(train::train_step(
          *model,
          *optimizer,
          batches[step],
          true,
          mems,
          1e-3,
          static_cast<int64_t>(step) + 1,
          step_options));
      if (step >= 2) { // captured at step 2, replayed after
        out.host_reads += counter.counts().host_reads;
      }
    }
    for (const auto& report : train::read_steps(results)) {
      out.sums.push_back(report.terms.front().sum);
    }
    for (const auto& p : model->parameters()) {
      out.weights.push_back(p.detach().cpu());
    }
    out.next_draws = torch::rand({4}, torch::kCUDA).cpu();
    eval::EvalOptions eval_options;
    eval_options.device = torch::kCUDA;
    eval_options.bf16 = bf16;
    eval::Evaluator evaluator(*model, eval_options);
    for (const auto& batch : batches) {
      evaluator.consume(batch, true);
    }
    out.eval_loss = evaluator.result().loss();
    return out;
  };
  for (const bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "float32");
    const auto eager = run(false, bf16);
    const auto graphed = run(true, bf16);
    ASSERT_EQ(eager.sums.size(), graphed.sums.size());
    for (size_t i = 0; i < eager.sums.size(); ++i) {
      EXPECT_NEAR(eager.sums[i], graphed.sums[i], 1e-5 * std::abs(eager.sums[i])) << "step " << i;
    }
    for (size_t i = 0; i < eager.weights.size(); ++i) {
      EXPECT_TRUE(torch::allclose(eager.weights[i], graphed.weights[i], 1e-4, 1e-6))
          << "parameter " << i;
    }
    EXPECT_TRUE(torch::equal(eager.next_draws, graphed.next_draws));
    EXPECT_NEAR(eager.eval_loss, graphed.eval_loss, 1e-4 * std::abs(eager.eval_loss));
    EXPECT_EQ(graphed.host_reads, 0);
  }
}

// The fused layer (native_dropout's masks, bf16 products) against the composed modules on the
// GPU: values and every gradient, without dropout, in float32 and under bf16 autocast.
TEST_F(Cuda, FusedLayerMatchesTheComposedLayer) {
  torch::manual_seed(5);
  const auto attention = nn::AttentionOptions(64, 4, 16);
  nn::RelDecoderLayer fused(nn::DecoderLayerOptions(attention, 128));
  nn::RelDecoderLayer composed(std::dynamic_pointer_cast<nn::RelDecoderLayerImpl>(fused->clone()));
  composed->options.fused(false);
  fused->to(torch::kCUDA);
  composed->to(torch::kCUDA);
  const auto cuda = torch::TensorOptions().device(torch::kCUDA);
  const auto h0 = torch::randn({8, 3, 64}, cuda);
  const auto mem = torch::randn({6, 3, 64}, cuda);
  const auto r = torch::randn({14, 64}, cuda);
  const auto u0 = torch::randn({4, 16}, cuda);
  const auto v0 = torch::randn({4, 16}, cuda);
  const auto mask = nn::causal_mask(8, 6, false, 6, torch::kCUDA);
  const auto grad = torch::randn({8, 3, 64}, cuda);
  const auto run = [&](nn::RelDecoderLayer& layer, bool bf16) {
    const auto h = h0.clone().requires_grad_(true);
    const auto u = u0.clone().requires_grad_(true);
    const auto v = v0.clone().requires_grad_(true);
    layer->zero_grad();
    {
      const runtime::AutocastGuard autocast(torch::kCUDA, bf16);
      layer->forward(h, {r, u, v}, mask, mem).backward(grad);
    }
    std::vector<torch::Tensor> out{h.grad(), u.grad(), v.grad()};
    for (const auto& p : layer->parameters()) {
      out.push_back(p.grad());
    }
    return out;
  };
  for (const bool bf16 : {false, true}) {
    const auto a = run(fused, bf16);
    const auto b = run(composed, bf16);
    for (size_t i = 0; i < a.size(); ++i) {
      const double tol = bf16 ? 3e-2 : 1e-4;
      EXPECT_TRUE(torch::allclose(a[i].cpu(), b[i].cpu(), tol, tol))
          << (bf16 ? "bf16" : "float32") << " gradient " << i;
    }
  }
}

// The training records' GPU memory: a tensor's bytes handed out, within what is reserved.
TEST_F(Cuda, MemoryUseCountsTheCachingAllocatorsBytes) {
  const auto before = runtime::memory_use(torch::kCUDA);
  const auto tensor = torch::ones({16 * 1024 * 1024}, torch::kCUDA); // 64 MiB
  const auto with = runtime::memory_use(torch::kCUDA);
  EXPECT_GE(with.cuda_allocated_mib - before.cuda_allocated_mib, 63.0);
  EXPECT_GE(with.cuda_reserved_mib, with.cuda_allocated_mib);
  nlohmann::json record;
  runtime::add_memory_use(record, with, torch::kCUDA);
  EXPECT_TRUE(record.contains("cuda_reserved_mib")) << record;
}

// xl-bench --profile on a GPU: the kernels a product launches, their time within the wall time.
TEST_F(Cuda, ProfileListsTheKernelsAndTheDevicesBusyTime) {
  const auto a = torch::randn({1024, 1024}, torch::kCUDA);
  const auto profile = runtime::profile_work(
      torch::kCUDA,
      [&] {
        for (int i = 0; i < 4; ++i) {
          (void)torch::mm(a, a);
        }
      },
      10);
  EXPECT_GE(profile.device_activities, 4);
  EXPECT_GT(profile.device_busy_ms, 0.0);
  EXPECT_LE(profile.device_busy_ms, profile.wall_ms);
  ASSERT_FALSE(profile.top.empty());
  for (const auto& entry : profile.top) { // kernels, not the host's operators
    EXPECT_EQ(entry.name.rfind("aten::", 0), std::string::npos) << entry.name;
  }
}

} // namespace
} // namespace xl::models
