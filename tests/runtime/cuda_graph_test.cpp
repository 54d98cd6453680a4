// The graphed block's wiring, emulated on the CPU (runtime::GraphReplay::kEmulated): static
// buffers, gradients through the block's node, the order of forwards and backwards, and the
// cache's signatures. The CUDA captures are tests/gpu's.
#include "xl/runtime/cuda_graph.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "xl/runtime/op_counter.h"

namespace xl::runtime {
namespace {

// y = tanh(x @ w + b) and y * m: two outputs from a graded input x, a constant m and two
// parameters.
struct Block {
  torch::Tensor w = torch::randn({4, 3}).requires_grad_(true);
  torch::Tensor b = torch::randn({3}).requires_grad_(true);

  GraphFn fn() const {
    return [w = w, b = b](const std::vector<torch::Tensor>& in) {
      auto y = torch::tanh(torch::addmm(b, in[0], w));
      return std::vector<torch::Tensor>{y, y * in[1]};
    };
  }
};

TEST(GraphedBlock, GivesTheFunctionsOutputsAndGradients) {
  torch::manual_seed(0);
  Block block;
  auto upstream = torch::randn({5, 4}).requires_grad_(true);
  GraphedBlock graphed(
      GraphReplay::kEmulated, block.fn(), {block.w, block.b}, {upstream * 2, torch::randn({5, 3})});
  for (int call = 0; call < 3; ++call) { // other values each call, through the same buffers
    const auto m = torch::randn({5, 3});
    const auto x = upstream * (call + 2); // not a leaf: the gradient must flow on to upstream
    const auto seed = torch::randn({5, 3});

    const auto out = graphed({x, m});
    ASSERT_EQ(out.size(), 2u);
    (out[0].sum() + (out[1] * seed).sum()).backward();
    const auto graphed_grads = std::vector<torch::Tensor>{
        upstream.grad().clone(), block.w.grad().clone(), block.b.grad().clone()};
    for (auto* t : {&upstream, &block.w, &block.b}) {
      t->mutable_grad() = torch::Tensor();
    }

    const auto plain = block.fn()({x, m});
    EXPECT_TRUE(torch::equal(out[0], plain[0]));
    EXPECT_TRUE(torch::equal(out[1], plain[1]));
    (plain[0].sum() + (plain[1] * seed).sum()).backward();
    EXPECT_TRUE(torch::allclose(graphed_grads[0], upstream.grad()));
    EXPECT_TRUE(torch::allclose(graphed_grads[1], block.w.grad()));
    EXPECT_TRUE(torch::allclose(graphed_grads[2], block.b.grad()));
    for (auto* t : {&upstream, &block.w, &block.b}) {
      t->mutable_grad() = torch::Tensor();
    }
  }
}

TEST(GraphedBlock, RefusesTheBackwardOfAReplacedForward) {
  Block block;
  const auto x = torch::randn({5, 4}).requires_grad_(true);
  const auto m = torch::randn({5, 3});
  GraphedBlock graphed(GraphReplay::kEmulated, block.fn(), {block.w, block.b}, {x, m});
  const auto first = graphed({x, m});
  const auto second = graphed({x, m});
  try {
    first[0].sum().backward();
    FAIL() << "the first forward's backward ran";
  } catch (const c10::Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("before the backward of an earlier one"), std::string::npos)
        << e.what();
  }
  second[0].sum().backward(); // the last forward's backward still runs
  EXPECT_TRUE(block.w.grad().defined());
}

TEST(GraphedBlock, RefusesInputsOfOtherShapes) {
  Block block;
  GraphedBlock graphed(
      GraphReplay::kEmulated, block.fn(), {}, {torch::randn({5, 4}), torch::randn({5, 3})});
  EXPECT_THROW(graphed({torch::randn({6, 4}), torch::randn({6, 3})}), c10::Error);
}

TEST(GraphedBlock, WithoutGradModeItRecordsNoGraph) {
  Block block;
  const auto x = torch::randn({5, 4}).requires_grad_(true);
  const torch::NoGradGuard no_grad;
  GraphedBlock graphed(
      GraphReplay::kEmulated, block.fn(), {block.w, block.b}, {x, x.narrow(1, 0, 3)});
  const auto out = graphed({x, x.narrow(1, 0, 3)});
  EXPECT_FALSE(out[0].requires_grad());
  EXPECT_EQ(out[0].grad_fn(), nullptr);
}

// The operator calls of an emulated run count as graphed, and each forward and backward as one
// replay: what the host would call with CUDA graphs is the rest, plus the replays.
TEST(GraphedBlock, CountsItsEmulatedCallsAsGraphedAndItsReplays) {
  Block block;
  const auto x = torch::randn({5, 4}).requires_grad_(true);
  const auto m = torch::randn({5, 3});
  GraphedBlock graphed(GraphReplay::kEmulated, block.fn(), {block.w, block.b}, {x, m});
  OpCounts counts;
  {
    const OpCounter counter;
    graphed({x, m})[0].sum().backward();
    counts = counter.counts();
  }
  EXPECT_EQ(counts.replays, 2);
  EXPECT_GT(counts.graphed, 4); // addmm, tanh, mul forward; their backward
  EXPECT_LT(counts.graphed, counts.ops);
  EXPECT_EQ(counts.host_calls(), counts.ops - counts.graphed + 2);
}

TEST(GraphCache, CapturesOncePerSignatureAndDropsTheLeastRecentlyUsed) {
  Block block;
  GraphCache cache(GraphReplay::kEmulated, 2);
  int asked = 0; // the parameters are asked for at a capture only
  const auto params = [&] {
    ++asked;
    return std::vector<torch::Tensor>{block.w, block.b};
  };
  const auto run = [&](int64_t rows, const std::string& key) {
    return cache.run(key, block.fn(), params, {torch::randn({rows, 4}), torch::randn({rows, 3})});
  };
  run(5, "train");
  run(5, "train");
  EXPECT_EQ(cache.captures(), 1);
  run(5, "eval");  // another key
  run(7, "train"); // other shapes: the least recently used ("train" at 5 rows) goes
  EXPECT_EQ(cache.captures(), 3);
  EXPECT_EQ(cache.size(), 2u);
  run(5, "eval");
  EXPECT_EQ(cache.captures(), 3);
  run(5, "train");
  EXPECT_EQ(cache.captures(), 4);
  EXPECT_EQ(asked, 4);
}

// A capture that fails (here: CUDA graphs of CPU tensors) leaves the block to run eagerly, with
// its numbers and gradients, and no graph is tried again.
TEST(GraphCache, AFailedCaptureRunsEagerly) {
  Block block;
  GraphCache cache(GraphReplay::kCuda);
  const auto x = torch::randn({5, 4}).requires_grad_(true);
  const auto m = torch::randn({5, 3});
  for (int call = 0; call < 2; ++call) {
    const auto out = cache.run(
        "train",
        block.fn(),
        [&] {
          return std::vector<torch::Tensor>{block.w, block.b};
        },
        {x, m});
    EXPECT_TRUE(torch::equal(out[1], block.fn()({x, m})[1]));
    out[0].sum().backward();
  }
  EXPECT_EQ(cache.captures(), 0);
  EXPECT_EQ(cache.size(), 0u);
  EXPECT_TRUE(block.w.grad().defined());
}

TEST(GraphCache, SignaturesTellGradientsAndGradModeApart) {
  const auto x = torch::randn({2, 3});
  const auto graded = x.clone().requires_grad_(true);
  EXPECT_NE(graph_signature("k", {x}), graph_signature("k", {graded}));
  EXPECT_NE(graph_signature("k", {x}), graph_signature("j", {x}));
  EXPECT_NE(graph_signature("k", {x}), graph_signature("k", {x.to(torch::kDouble)}));
  std::string without;
  {
    const torch::NoGradGuard no_grad;
    without = graph_signature("k", {x});
  }
  EXPECT_NE(graph_signature("k", {x}), without);
}

} // namespace
} // namespace xl::runtime
