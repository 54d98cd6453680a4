#include "xl/runtime/device.h"
#include "xl/runtime/autocast.h"

#include <ATen/autocast_mode.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>

#include "xl/util/log.h"

namespace xl::runtime {
namespace {

using ::testing::HasSubstr;

TEST(AutocastGuard, RunsTheCpusMatrixProductsInBf16AndRestoresTheState) {
  torch::nn::Linear linear(8, 8);
  const auto x = torch::randn({2, 8});
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  {
    AutocastGuard outer(torch::kCPU, true);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(linear(x).scalar_type(), torch::kBFloat16);
    {
      AutocastGuard off(torch::kCPU, false); // disabled: leaves the state alone
      EXPECT_EQ(linear(x).scalar_type(), torch::kBFloat16);
    }
    // A softmax on a bf16 input stays bf16 on the CPU: the models cast their fp32 islands.
    EXPECT_EQ(torch::softmax(linear(x), -1).scalar_type(), torch::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(linear(x).scalar_type(), torch::kFloat);
}

// Inside the scope the products read one bf16 copy of each weight from guard to guard, so a
// change of the weights there goes unseen (why only evaluations hold one); its end drops the
// copies. Outside, every product casts the weight as it is.
TEST(KeptWeightCasts, KeepOneCastOfEachWeightFromGuardToGuardUntilTheScopeEnds) {
  torch::nn::Linear layer(8, 8);
  const auto x = torch::randn({2, 8});
  const auto& w = layer->weight;
  const auto product = [&] { return linear(x, w, layer->bias); };
  const auto in_bf16 = [&] {
    const auto bf16 = torch::kBFloat16;
    return torch::nn::functional::linear(x.to(bf16), w.to(bf16), layer->bias.to(bf16));
  };
  const auto scale = [&](double by) {
    const torch::NoGradGuard no_grad;
    w.mul_(by);
  };
  {
    AutocastGuard autocast(torch::kCPU, true);
    EXPECT_FALSE(KeptWeightCasts::active());
    EXPECT_TRUE(product_weight(w, torch::kCPU).is_same(w));
    EXPECT_NE(
        cast_weight(w, torch::kBFloat16).data_ptr(), cast_weight(w, torch::kBFloat16).data_ptr());
  }
  {
    const KeptWeightCasts kept(true);
    EXPECT_TRUE(KeptWeightCasts::active());
    torch::Tensor before;
    {
      AutocastGuard autocast(torch::kCPU, true);
      before = product();
    }
    EXPECT_TRUE(torch::equal(before, in_bf16()));
    scale(2.0);
    AutocastGuard autocast(torch::kCPU, true);
    EXPECT_TRUE(torch::equal(product(), before)); // the kept copy, not the scaled weight
    EXPECT_EQ(
        product_weight(w, torch::kCPU).data_ptr(), cast_weight(w, torch::kBFloat16).data_ptr());
    EXPECT_EQ(cast_weight(w, torch::kFloat).data_ptr(), w.data_ptr());
  }
  EXPECT_FALSE(KeptWeightCasts::active());
  scale(0.25);
  AutocastGuard autocast(torch::kCPU, true);
  EXPECT_TRUE(torch::equal(product(), in_bf16())); // the weight as it is now
  const KeptWeightCasts disabled(false);
  EXPECT_FALSE(KeptWeightCasts::active());
}

TEST(PickDevice, Bf16OnACpuWithoutItsInstructionsWarnsWithTheMeasuredRates) {
  std::ostringstream log;
  const auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(log);
  auto& logger = xl::logger();
  logger.sinks().push_back(sink);
  config::TrainConfig train;
  train.device = config::Device::kCpu;
  train.bf16 = true;
  const auto device = pick_device(train);
  logger.sinks().pop_back();
  EXPECT_TRUE(device.is_cpu());
  if (cpu_has_bf16()) { // with AMX nothing; with avx512_bf16 alone, only when bf16 is slower
    EXPECT_THAT(log.str(), ::testing::AnyOf(::testing::Eq(""), HasSubstr("but no AMX")));
  } else {
    EXPECT_THAT(log.str(), HasSubstr("without bf16 instructions"));
    EXPECT_THAT(log.str(), HasSubstr("GFLOP/s"));
    EXPECT_THAT(log.str(), HasSubstr("--set train.bf16=false"));
  }
  // float32 runs say nothing, whatever the CPU.
  train.bf16 = false;
  std::ostringstream quiet;
  logger.sinks().push_back(std::make_shared<spdlog::sinks::ostream_sink_mt>(quiet));
  pick_device(train);
  logger.sinks().pop_back();
  EXPECT_EQ(quiet.str(), "");
}

TEST(PickDevice, Bf16SlowerThanFloat32SaysSoWithBothRates) {
  // An Intel Xeon with avx512_bf16 and no AMX measured 153 against 293 GFLOP/s.
  const auto slower = bf16_speed_warning(false, 153.0, 293.0);
  EXPECT_THAT(slower, HasSubstr("avx512_bf16 but no AMX"));
  EXPECT_THAT(slower, HasSubstr("153.0 GFLOP/s here against 293.0 in float32 (0.52x)"));
  EXPECT_THAT(slower, HasSubstr("--set train.bf16=false"));
  EXPECT_EQ(bf16_speed_warning(false, 300.0, 293.0), "");
  EXPECT_THAT(bf16_speed_warning(true, 0.5, 60.0), HasSubstr("without bf16 instructions"));
  EXPECT_THAT(bf16_speed_warning(true, 0.5, 60.0), HasSubstr("120x slower"));
}

TEST(SetupRuntime, Tf32FollowsTheConfig) {
  const bool blas = at::globalContext().allowTF32CuBLAS();
  const bool dnn = at::globalContext().allowTF32CuDNN();
  config::TrainConfig train;
  EXPECT_TRUE(train.tf32); // on unless a config says otherwise, as NVIDIA's recipe runs
  train.tf32 = false;
  setup_runtime(train);
  EXPECT_FALSE(at::globalContext().allowTF32CuBLAS());
  EXPECT_FALSE(at::globalContext().allowTF32CuDNN());
  train.tf32 = true;
  setup_runtime(train);
  EXPECT_TRUE(at::globalContext().allowTF32CuBLAS());
  EXPECT_TRUE(at::globalContext().allowTF32CuDNN());
  at::globalContext().setAllowTF32CuBLAS(blas);
  at::globalContext().setAllowTF32CuDNN(dnn);
}

TEST(MatmulRate, IsPositiveForEitherDtype) {
  for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
    EXPECT_GT(matmul_gflops(torch::kCPU, dtype, 64, 0.01), 0.0);
  }
}

} // namespace
} // namespace xl::runtime
