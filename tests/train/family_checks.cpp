#include "train/family_checks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <set>
#include <vector>

#include "test_util.h"
#include "xl/eval/evaluator.h"
#include "xl/models/factory.h"
#include "xl/models/layer_stack.h"
#include "xl/run/run_dir.h"
#include "xl/runtime/op_counter.h"
#include "xl/sources/dataset.h"
#include "xl/train/optimizer.h"
#include "xl/train/parameter_groups.h"
#include "xl/train/step.h"
#include "xl/train/trainer.h"

namespace xl::test {

bool graph_has(const torch::Tensor& t, const std::string& name) {
  std::deque<torch::autograd::Node*> queue{t.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  while (!queue.empty()) {
    auto* node = queue.front();
    queue.pop_front();
    if (node == nullptr || !seen.insert(node).second) {
      continue;
    }
    if (node->name() == name) {
      return true;
    }
    for (const auto& edge : node->next_edges()) {
      queue.push_back(edge.function.get());
    }
  }
  return false;
}

namespace {

// One training step of `model` per batch (Adam as `c` says, the memory carried in `mems`): every
// term's sum of every step, each step finite.
std::vector<double> train_steps(
    const config::Config& c,
    models::LanguageModelImpl& model,
    const std::vector<sources::Batch>& batches,
    bool continues,
    bool bf16,
    std::vector<nn::Memory>& mems) {
  auto optimizer = train::make_optimizer(c.train, model.parameters());
  train::StepOptions options;
  options.clip = c.train.clip;
  options.bf16 = bf16;
  std::vector<double> sums;
  for (size_t s = 0; s < batches.size(); ++s) {
    const auto result = train::read_step(train::train_step(
        model,
        *optimizer,
        batches[s],
        continues,
        mems,
        c.train.lr,
        static_cast<int64_t>(s) + 1,
        options));
    EXPECT_TRUE(result.finite);
    for (const auto& term : result.terms) {
      sums.push_back(term.sum);
    }
  }
  return sums;
}

struct Steps {
  std::vector<double> sums; // every term of both steps
  std::vector<torch::Tensor> grads;
  torch::Tensor next_draws;
};

// Two training steps (the memory carried from the first into the second) from the same
// initial weights and batches.
Steps two_steps(
    config::Config c,
    bool checkpointed,
    bool bf16,
    const std::vector<sources::Batch>& batches,
    bool continues,
    int64_t n_token) {
  c.train.activation_checkpointing = checkpointed;
  torch::manual_seed(5);
  auto model = models::build_model(c, n_token);
  model->train();
  std::vector<nn::Memory> mems(1);
  Steps steps;
  steps.sums = train_steps(c, *model, batches, continues, bf16, mems);
  for (const auto& p : model->parameters()) {
    EXPECT_EQ(p.scalar_type(), torch::kFloat); // master weights stay float32
    steps.grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros({0}));
  }
  steps.next_draws = torch::rand({4});
  // The flag reaches the layers: the graph holds replay nodes exactly when it is on.
  const auto out = model->forward(batches[0], {}, {});
  EXPECT_EQ(graph_has(out.terms.front().sum, kReplay), checkpointed);
  return steps;
}

} // namespace

void expect_recompute_gives_the_plain_steps(const config::Config& config) {
  const int64_t n_token = 3000;
  torch::manual_seed(2);
  const auto dataset = models::random_dataset(config, n_token, 4000);
  auto source = dataset->train_source();
  const std::vector<sources::Batch> batches{
      sources::next_cycling(*source), sources::next_cycling(*source)};
  const bool continues = source->continues_streams();
  // Under bf16 autocast too (on the CPU here, as on CUDA): the replay runs under the
  // forward's autocast, so it computes in the same dtypes.
  for (const bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "float32");
    const auto plain = two_steps(config, false, bf16, batches, continues, n_token);
    const auto replayed = two_steps(config, true, bf16, batches, continues, n_token);
    ASSERT_EQ(plain.sums.size(), replayed.sums.size());
    for (size_t i = 0; i < plain.sums.size(); ++i) {
      EXPECT_NEAR(plain.sums[i], replayed.sums[i], 1e-6 * std::abs(plain.sums[i])) << "term " << i;
    }
    ASSERT_EQ(plain.grads.size(), replayed.grads.size());
    for (size_t i = 0; i < plain.grads.size(); ++i) {
      EXPECT_TRUE(torch::allclose(plain.grads[i], replayed.grads[i], 1e-5, 1e-7))
          << "parameter " << i;
    }
    EXPECT_TRUE(torch::equal(plain.next_draws, replayed.next_draws));
  }
}

void expect_steps_read_nothing(const config::Config& config) {
  torch::manual_seed(3);
  auto model = models::build_model(config, 3000);
  model->train();
  const auto dataset = models::random_dataset(config, 3000, 6000);
  auto source = dataset->train_source();
  auto optimizer =
      train::make_optimizer(config.train, train::plan_parameters(config, *model).groups);
  std::vector<nn::Memory> mems(static_cast<size_t>(config.train.batch_chunk));
  const auto options = train::StepOptions::from(config.train, torch::kCPU);
  std::vector<train::StepResult> results;
  const auto step = [&](int64_t s) {
    results.push_back(train::train_step(
        *model,
        *optimizer,
        sources::next_cycling(*source),
        source->continues_streams(),
        mems,
        config.train.lr,
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
  const auto reports = train::read_steps(results);
  ASSERT_EQ(reports.size(), 4u);
  for (const auto& r : reports) {
    EXPECT_TRUE(r.finite);
    EXPECT_TRUE(std::isfinite(r.terms.front().sum));
    EXPECT_GT(r.terms.front().sum, 0.0);
    EXPECT_GT(r.grad_norm, 0.0);
  }
}

namespace {

struct GraphRun {
  std::string why_not; // the family's reason for running no graphs
  std::vector<double> sums;
  std::vector<torch::Tensor> weights;
  double eval_loss = 0.0;
  bool graphed = false; // a steady forward ran through the graph's node
};

GraphRun graph_run(
    const config::Config& c,
    bool graphs,
    const std::vector<sources::Batch>& batches,
    bool continues,
    int64_t n_token) {
  torch::manual_seed(5);
  auto model = models::build_model(c, n_token);
  model->train();
  GraphRun run;
  if (graphs) {
    run.why_not = models::use_graphs(*model, runtime::GraphReplay::kEmulated);
    EXPECT_EQ(models::uses_graphs(*model), run.why_not.empty());
  }
  std::vector<nn::Memory> mems(1);
  run.sums = train_steps(c, *model, batches, continues, false, mems);
  for (const auto& p : model->parameters()) {
    run.weights.push_back(p.detach().clone());
  }
  // One more forward with the memory the steps left (full by now: steady shapes).
  const auto out = model->forward(batches.back(), continues ? mems[0] : nn::Memory{}, {});
  run.graphed = graph_has(out.terms.front().sum, kGraphed);
  eval::EvalOptions eval_options;
  eval_options.span = models::eval_span(c, false);
  eval::Evaluator evaluator(*model, eval_options);
  for (const auto& batch : batches) {
    evaluator.consume(batch, continues);
  }
  run.eval_loss = evaluator.result().loss();
  return run;
}

} // namespace

std::string expect_graphs_give_the_eager_numbers(const config::Config& config) {
  const int64_t n_token = 3000;
  torch::manual_seed(2);
  const auto dataset = models::random_dataset(config, n_token, 8000);
  auto source = dataset->train_source();
  std::vector<sources::Batch> batches;
  for (int i = 0; i < 4; ++i) {
    batches.push_back(sources::next_cycling(*source));
  }
  const bool continues = source->continues_streams();
  const auto eager = graph_run(config, false, batches, continues, n_token);
  const auto graphed = graph_run(config, true, batches, continues, n_token);
  if (!graphed.why_not.empty()) {
    EXPECT_FALSE(graphed.graphed);
    return graphed.why_not;
  }
  EXPECT_TRUE(graphed.graphed);
  EXPECT_FALSE(eager.graphed);
  // The same operators on the same values: the same bits.
  EXPECT_EQ(eager.sums, graphed.sums);
  EXPECT_EQ(eager.weights.size(), graphed.weights.size());
  for (size_t i = 0; i < eager.weights.size() && i < graphed.weights.size(); ++i) {
    EXPECT_TRUE(torch::equal(eager.weights[i], graphed.weights[i])) << "parameter " << i;
  }
  EXPECT_NEAR(eager.eval_loss, graphed.eval_loss, 1e-5 * std::abs(eager.eval_loss));
  return "";
}

std::string expect_graphed_runs_resume_exactly(const config::Config& config) {
  const TempDir dir;
  const int64_t n_token = 3000;
  std::string why_not;
  // Eight steps, a checkpoint (and a validation) every four.
  const auto train = [&](const fs::path& run, bool resume, std::optional<int64_t> stop) {
    auto c = config;
    c.run.dir = run.string();
    c.train.max_step = 8;
    c.train.eval_interval = 4;
    c.train.log_interval = 1;
    c.train.max_eval_steps = 2;
    torch::manual_seed(11);
    const auto dataset = models::random_dataset(c, n_token, 20000);
    auto model = models::build_model(c, n_token);
    why_not = models::use_graphs(*model, runtime::GraphReplay::kEmulated);
    train::Trainer trainer(c, run::prepare_directory(c, resume), *dataset, model, torch::kCPU);
    trainer.run(resume, stop);
  };
  train(dir.path() / "whole", false, std::nullopt);
  train(dir.path() / "split", false, 4);
  train(dir.path() / "split", true, std::nullopt);
  const auto whole = train_losses(dir.path() / "whole");
  const auto split = train_losses(dir.path() / "split");
  EXPECT_EQ(whole.size(), 8u);
  for (int64_t step = 5; step <= 8; ++step) {
    EXPECT_EQ(whole.at(step), split.at(step)) << "step " << step;
  }
  return why_not;
}

} // namespace xl::test
