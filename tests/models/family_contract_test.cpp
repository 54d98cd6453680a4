// The library half of the contract every model family keeps (the apps' half:
// e2e/family_contract_test.cpp), for every family's tiny config (test::tiny_configs(): the
// built-in families' configs/<family>/tiny*.yaml and the test families'
// tests/families/<family>/tiny.yaml): bf16 autocast agrees with float32, activation
// checkpointing gives the plain steps, graphs of the layer stack (emulated) give the eager steps
// and resume exactly,
// train.lr_layer_decay reaches every layer, a training step reads nothing from the device, the
// memory estimate counts the parameters exactly, and a family without memory is evaluated on
// windows only, with the same message for all.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "families/test_families.h"
#include "test_util.h"
#include "train/family_checks.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/models/memory_estimate.h"
#include "xl/models/registry.h"
#include "xl/runtime/autocast.h"
#include "xl/sources/dataset.h"
#include "xl/train/parameter_groups.h"
#include "xl/util/error.h"

namespace xl::models {
namespace {

class LibraryContract : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    test::register_test_families();
  }

  // The tiny config with `sets` and one thread.
  config::Config load(std::vector<std::string> sets = {}) const {
    sets.emplace_back("train.threads=1");
    return config::load(path(), sets);
  }

  std::string path() const {
    return std::string(test::kSourceDir) + "/" + GetParam();
  }
};

// bf16 keeps 8 significant bits (about 2.4 decimal digits). With the matrix products in bf16
// and the fp32 islands in float32, these small models' summed losses moved by at most 2e-5 of
// themselves and a token's log-probability by at most 2e-3 nats; the bounds leave a margin of
// ten to fifty.
constexpr double kSumTolerance = 1e-3;     // relative, per loss term
constexpr double kLogProbTolerance = 2e-2; // nats, any token

// bf16 autocast on the CPU, through the code CUDA runs: the forward agrees with float32 within
// bf16's precision, and autocast is really on (the numbers differ). The same training steps
// under bf16, with and without activation checkpointing, are in the next test; exact resume
// under bf16 in tests/train/trainer_test.cpp.
TEST_P(LibraryContract, Bf16ForwardAgreesWithFloat32WithinBf16Precision) {
  const auto c = load();
  const int64_t n_token = 3000;
  torch::manual_seed(3);
  const auto dataset = random_dataset(c, n_token, 4000);
  auto source = dataset->train_source();
  const auto batch = sources::next_cycling(*source);
  torch::manual_seed(5);
  auto model = build_model(c, n_token);
  model->eval();
  torch::NoGradGuard no_grad;
  ForwardArgs args;
  args.log_probs = true;
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
  // A token loss keeps its log-probabilities when asked (an example's loss has none).
  if (fp32.terms.front().kind == TermKind::kTokenNll) {
    ASSERT_TRUE(fp32.log_probs.defined() && bf16.log_probs.defined());
    EXPECT_EQ(bf16.log_probs.scalar_type(), torch::kFloat);
    EXPECT_LE((bf16.log_probs - fp32.log_probs).abs().max().item<double>(), kLogProbTolerance);
  }
}

// With dropout on, so that a replay drawing other masks would show.
TEST_P(LibraryContract, ActivationCheckpointingGivesThePlainSteps) {
  test::expect_recompute_gives_the_plain_steps(load({"model.dropout=0.3", "model.dropatt=0.2"}));
}

// The layer stack is named `layers` (models::kLayerStack), so the decay reaches each layer: at
// 0.5 over 3 layers, layers.0 and layers.1 get their own rates and every parameter of a layer
// is in it.
// CUDA graphs' wiring, emulated on the CPU: the same training steps and evaluation as eager
// calls (the captures themselves are tests/gpu's). A family without graphs says why.
TEST_P(LibraryContract, GraphedStepsGiveTheEagerNumbers) {
  const auto why_not = test::expect_graphs_give_the_eager_numbers(load());
  if (!why_not.empty()) {
    GTEST_SKIP() << "runs no graphs: " << why_not;
  }
}

// A run through the trainer with the graphs emulated resumes exactly from its checkpoint.
TEST_P(LibraryContract, GraphedRunsResumeExactly) {
  const auto why_not = test::expect_graphed_runs_resume_exactly(load());
  if (!why_not.empty()) {
    GTEST_SKIP() << "runs no graphs: " << why_not;
  }
}

TEST_P(LibraryContract, LayerDecayReachesEveryLayer) {
  const auto config = load({"model.n_layer=3", "train.lr_layer_decay=0.5"});
  auto model = build_model(config, 3000);
  const auto plan = train::plan_parameters(config, *model);
  EXPECT_EQ(plan.layer_rates, (std::vector<std::string>{"layers.0 x0.25", "layers.1 x0.5"}));
  std::set<int64_t> layers;
  for (const auto& item : model->named_parameters()) {
    layers.insert(train::layer_of(item.key()));
  }
  EXPECT_EQ(layers, (std::set<int64_t>{-1, 0, 1, 2}));
}

// Between the trainer's logging steps, nothing is read from the device.
TEST_P(LibraryContract, TrainingStepsReadNothingFromTheDevice) {
  test::expect_steps_read_nothing(load());
}

// The descriptor's memory shape counts the parameters the model has, exactly.
TEST_P(LibraryContract, TheMemoryEstimateCountsTheParameters) {
  const auto config = load();
  const auto model = build_model(config, 3000);
  const auto parameters = static_cast<double>(count_parameters(*model));
  EXPECT_EQ(estimate_training_memory(config, 3000).parameters, parameters);
  EXPECT_EQ(estimate_evaluation_memory(config, 3000).parameters, parameters);
}

// "Carries no memory" is a fact of the descriptor: every such family is refused memory-mode
// evaluation with the same message, and its evaluation spans keep no memory.
TEST_P(LibraryContract, WithoutMemoryItIsEvaluatedOnWindowsOnly) {
  const auto config = load();
  if (model_family(config).config.carries_memory) {
    GTEST_SKIP() << config.model.type.name << " carries memory";
  }
  EXPECT_EQ(eval_span(config, false).mem_len, 0);
  EXPECT_EQ(eval_span(config, true).mem_len, 0);
  try {
    config::load(path(), {"eval.mode=memory"});
    ADD_FAILURE() << "memory-mode evaluation accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "model.type " + config.model.type.name +
            " has no memory to carry between segments: set vanilla"),
        std::string::npos)
        << e.what();
  }
}

// Each tiny config, named by its folder and file (test::tiny_config_name).
INSTANTIATE_TEST_SUITE_P(
    EveryFamily,
    LibraryContract,
    ::testing::ValuesIn(test::tiny_configs()),
    [](const ::testing::TestParamInfo<std::string>& param) {
      return test::tiny_config_name(param.param);
    });

} // namespace
} // namespace xl::models
