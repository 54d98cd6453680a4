// bf16 autocast on the CPU, through the code CUDA runs: every family's forward agrees with
// float32 within bf16's precision, and autocast is really on (the numbers differ). The same
// training steps under bf16, with and without activation checkpointing, are in
// tests/train/checkpoint_test.cpp; exact resume under bf16 in tests/train/trainer_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/runtime/autocast.h"
#include "xl/runtime/device.h"
#include "xl/sources/dataset.h"

namespace xl::models {
namespace {

// bf16 keeps 8 significant bits (about 2.4 decimal digits). With the matrix products in bf16
// and the fp32 islands in float32, these small models' summed losses moved by at most 2e-5 of
// themselves and a token's log-probability by at most 2e-3 nats; the bounds leave a margin of
// ten to fifty.
constexpr double kSumTolerance = 1e-3;     // relative, per loss term
constexpr double kLogProbTolerance = 2e-2; // nats, any token

TEST(Bf16Autocast, EveryFamilysForwardAgreesWithFloat32WithinBf16Precision) {
  for (const std::string& name : test::tiny_configs()) {
    SCOPED_TRACE(name);
    const auto c = config::load(std::string(test::kSourceDir) + "/" + name, {"train.threads=1"});
    const int64_t n_token = 3000;
    torch::manual_seed(3);
    const auto dataset = models::random_dataset(c, n_token, 4000);
    auto source = dataset->train_source();
    const auto batch = sources::next_cycling(*source);
    torch::manual_seed(5);
    auto model = build_model(c, n_token);
    model->eval();
    torch::NoGradGuard no_grad;
    ForwardArgs args;
    args.log_probs = c.model.type != "xlnet";
    const auto fp32 = model->forward(batch, {}, args);
    ModelOutput bf16;
    {
      runtime::AutocastGuard autocast(torch::kCPU, true);
      bf16 = model->forward(batch, {}, args);
    }
    ASSERT_EQ(fp32.terms.size(), bf16.terms.size());
    double largest_change = 0;
    for (size_t i = 0; i < fp32.terms.size(); ++i) {
      if (fp32.terms[i].kind == TermKind::kAccuracy) {
        continue; // counts of argmaxes: a near tie may flip
      }
      const double a = fp32.terms[i].sum.item<double>();
      const double b = bf16.terms[i].sum.item<double>();
      EXPECT_EQ(bf16.terms[i].sum.scalar_type(), torch::kFloat) << fp32.terms[i].name;
      EXPECT_LE(std::abs(b - a), kSumTolerance * std::abs(a))
          << fp32.terms[i].name << ": float32 " << a << ", bf16 " << b;
      largest_change = std::max(largest_change, std::abs(b - a));
    }
    EXPECT_GT(largest_change, 0.0) << "autocast changed nothing";
    if (args.log_probs) {
      EXPECT_EQ(bf16.log_probs.scalar_type(), torch::kFloat);
      EXPECT_LE((bf16.log_probs - fp32.log_probs).abs().max().item<double>(), kLogProbTolerance);
    }
  }
}

} // namespace
} // namespace xl::models
