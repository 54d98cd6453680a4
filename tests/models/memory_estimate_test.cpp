// The memory estimate: its parameter count is the built model's, exactly, for every shipped
// config (so a size that cannot fit is refused before anything is allocated); its terms grow
// as the formula says; and a config past the available memory is a UserError naming both
// numbers, or a warning when the check is skipped.
#include "xl/models/memory_estimate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/models/transformer_xl/config.h"
#include "xl/util/error.h"

namespace xl::models {
namespace {

using ::testing::HasSubstr;

// The vocabulary each shipped config's data folder holds.
int64_t vocabulary_of(const config::Config& c) {
  static const std::map<std::string, int64_t> sizes{
      {"data/prepared/enwik8", 256},
      {"data/prepared/enwik8-prefix", 256},
      {"data/prepared/text8", 27},
      {"data/prepared/wikitext-103", 267735},
      {"data/prepared/wikitext-2", 33278},
      {"data/prepared/nsmc", 32000},
      {"data/prepared/nsmc_8k", 8000}};
  return sizes.at(c.data.dir);
}

TEST(MemoryEstimate, CountsTheParametersOfEveryShippedConfigExactly) {
  int64_t checked = 0;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(std::string(test::kSourceDir) + "/configs")) {
    if (entry.path().extension() != ".yaml") {
      continue;
    }
    SCOPED_TRACE(entry.path().string());
    const auto c = config::load(entry.path().string());
    const int64_t n_token = vocabulary_of(c);
    const auto model = build_model(c, n_token);
    const auto parameters = static_cast<double>(count_parameters(*model));
    EXPECT_EQ(estimate_training_memory(c, n_token).parameters, parameters);
    EXPECT_EQ(estimate_evaluation_memory(c, n_token).parameters, parameters);
    ++checked;
  }
  EXPECT_GE(checked, 19);
}

config::Config tiny() {
  return config::load(std::string(test::kSourceDir) + "/configs/transformer_xl/tiny.yaml");
}

TEST(MemoryEstimate, TermsFollowTheFormula) {
  auto c = tiny();
  c.train.optim = config::Optim::kAdam;
  const auto adam = estimate_training_memory(c, 5000);
  EXPECT_EQ(adam.weights, 4 * adam.parameters);
  // Adam's two moments against plain SGD; momentum adds one buffer.
  c.train.optim = config::Optim::kSgd;
  c.train.mom = 0;
  const auto sgd = estimate_training_memory(c, 5000);
  EXPECT_EQ(adam.optimizer - sgd.optimizer, 8 * adam.parameters);
  c.train.mom = 0.9;
  EXPECT_EQ(estimate_training_memory(c, 5000).optimizer - sgd.optimizer, 4 * adam.parameters);
  EXPECT_GT(sgd.optimizer, 4 * adam.parameters); // the gradients and transients

  // Attention scores grow with queries x keys: doubling the segment (no memory) more than
  // doubles the activations; halving the batch through batch_chunk halves them.
  c.model.section<models::TransformerXLConfig>().mem_len = 0;
  const double base = estimate_training_memory(c, 5000).activations;
  c.train.tgt_len *= 2;
  EXPECT_GT(estimate_training_memory(c, 5000).activations, 2 * base);
  c.train.tgt_len /= 2;
  c.train.batch_chunk = 2;
  EXPECT_DOUBLE_EQ(estimate_training_memory(c, 5000).activations, base / 2);
  c.train.batch_chunk = 1;
  c.train.activation_checkpointing = true;
  EXPECT_LT(estimate_training_memory(c, 5000).activations, base);
  c.train.activation_checkpointing = false;

  // The memory: (n_layer + 1) tensors of [mem_len, batch, d_model], old and new.
  c.model.section<models::TransformerXLConfig>().mem_len = 8;
  EXPECT_EQ(
      estimate_training_memory(c, 5000).memories,
      2.0 * 4 * static_cast<double>(c.model.n_layer + 1) * static_cast<double>(c.train.batch_size) *
          8 * static_cast<double>(c.model.d_model));
  // Evaluation keeps no graph and no optimizer state.
  const auto eval = estimate_evaluation_memory(c, 5000);
  EXPECT_EQ(eval.optimizer, 0);
  EXPECT_LT(eval.total(), estimate_training_memory(c, 5000).total());
}

TEST(MemoryEstimate, SizesThatCannotFitAreRefusedWithBothNumbers) {
  auto c = tiny();
  c.model.d_model = 10'000'000;
  c.model.d_head = c.model.d_model / c.model.n_head;
  const auto huge = estimate_training_memory(c, 5000);
  EXPECT_GT(huge.total(), 1e15);
  try {
    check_memory(huge, "training", 8.0 * (1 << 30), "the CPU", true);
    FAIL() << "not refused";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("training needs about"));
    EXPECT_THAT(e.what(), HasSubstr("the CPU has 8.0 GiB available"));
    EXPECT_THAT(e.what(), HasSubstr("--skip-memory-check"));
  }
  EXPECT_NO_THROW(check_memory(huge, "training", 8.0 * (1 << 30), "the CPU", false));
  EXPECT_NO_THROW(check_memory(
      estimate_training_memory(tiny(), 5000), "training", 8.0 * (1 << 30), "the CPU", true));
  // Absurd sizes stay finite numbers rather than wrapping around.
  c = tiny();
  c.model.n_layer = 100'000;
  c.eval.tgt_len = 1'000'000;
  const auto eval = estimate_evaluation_memory(c, 5000);
  EXPECT_GT(eval.activations, 1e12);
  EXPECT_TRUE(std::isfinite(eval.total()));
}

} // namespace
} // namespace xl::models
