// A training step never makes the host wait for the device: every family's steps read no value
// (item, nonzero, a copy to the CPU) between the trainer's logging steps; read_steps reads them
// all at once. Counted on the CPU, where the same reads would each wait for a GPU.
#include <gtest/gtest.h>

#include <set>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/models/registry.h"
#include "xl/runtime/op_counter.h"
#include "xl/sources/dataset.h"
#include "xl/train/optimizer.h"
#include "xl/train/parameter_groups.h"
#include "xl/train/step.h"

namespace xl::train {
namespace {

TEST(TrainStep, EveryFamilysStepsReadNothingFromTheDevice) {
  std::set<std::string> covered;
  for (const auto& [name, sets] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"txl/tiny", {"train.clip=0.25"}}, // adaptive embedding and softmax, two tail bins
           {"txl/tiny", {"train.clip=0", "train.batch_chunk=2"}},
           {"xlnet/tiny", {}},
           {"xlnet/tiny_cls", {}},
           {"char/tiny", {}}}) {
    SCOPED_TRACE(name);
    auto all = sets;
    all.emplace_back("train.threads=1");
    const auto c = config::load(std::string(test::kSourceDir) + "/configs/" + name + ".yaml", all);
    covered.insert(c.model.type.name);
    torch::manual_seed(3);
    auto model = models::build_model(c, 3000);
    model->train();
    const auto dataset = models::random_dataset(c, 3000, 6000);
    auto source = dataset->train_source();
    auto optimizer = make_optimizer(c.train, plan_parameters(c, *model).groups);
    std::vector<nn::Memory> mems(static_cast<size_t>(c.train.batch_chunk));
    const auto options = StepOptions::from(c.train, torch::kCPU);
    std::vector<StepResult> results;
    const auto step = [&](int64_t s) {
      results.push_back(train_step(
          *model,
          *optimizer,
          sources::next_cycling(*source),
          source->continues_streams(),
          mems,
          c.train.lr,
          s,
          options));
    };
    step(1); // a stream's first step reads whether it kept its memory: it had none to keep
    runtime::OpCounts counts;
    {
      const runtime::OpCounter counter;
      for (int64_t s = 2; s <= 4; ++s) {
        step(s);
      }
      counts = counter.counts();
    }
    EXPECT_EQ(counts.host_reads, 0);
    EXPECT_GT(counts.ops, 100); // the counter saw the steps
    const auto reports = read_steps(results);
    ASSERT_EQ(reports.size(), 4u);
    for (const auto& r : reports) {
      EXPECT_TRUE(r.finite);
      EXPECT_TRUE(std::isfinite(r.terms.front().sum));
      EXPECT_GT(r.terms.front().sum, 0.0);
      EXPECT_GT(r.grad_norm, 0.0);
    }
  }
  // A family added to the registry must be added here too.
  for (const models::ModelFamily& family : models::model_families()) {
    EXPECT_TRUE(covered.count(family.name)) << family.name << " has no case here";
  }
}

} // namespace
} // namespace xl::train
