// Transformer-XL: published parameter counts, per-module initialisation, and the properties the
// math guarantees.
#include "xl/models/transformer_xl/model.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"

namespace xl::models {
namespace {

constexpr int64_t kWt103Vocab = 267735;

config::Config txl_config(const std::string& name) {
  return config::load(std::string(test::kSourceDir) + "/configs/transformer_xl/" + name + ".yaml");
}

// kimiyoung/transformer-xl train.py prints these for its wt103 scripts.
TEST(TransformerXLParameters, Wt103BaseMatchesPublishedCount) {
  auto model = build_model(txl_config("wt103_base"), kWt103Vocab);
  EXPECT_EQ(count_parameters(*model), 151107538);
}

TEST(TransformerXLParameters, Wt103LargeMatchesPublishedCount) {
  auto model = build_model(txl_config("wt103_large"), kWt103Vocab);
  EXPECT_EQ(count_parameters(*model), 285170506);
}

TransformerXLOptions txl_options(bool relative = true, int64_t mem_len = 6) {
  TransformerXLLengths lengths;
  lengths.mem_len = mem_len;
  return TransformerXLOptions(
             {2, nn::DecoderLayerOptions(nn::AttentionOptions(16, 2, 8), 32)},
             nn::AdaptiveSoftmaxOptions(
                 nn::AdaptiveOptions(40, 16, 16).cutoffs({10, 20}).div_val(2)))
      .relative(relative)
      .lengths(lengths);
}

sources::Batch lm_batch(const torch::Tensor& tokens, const torch::Tensor& targets) {
  sources::Batch batch;
  batch.tokens = tokens;
  batch.targets = targets;
  batch.n_targets = targets.numel();
  return batch;
}

// Al-Rfou et al.'s positions (kimiyoung's attn_type 3): a table per layer, memory 6 and
// segments of 8 fit its 16 rows.
TransformerXLOptions tiny_learned() {
  return txl_options(false).learned_positions(true).n_ctx(16);
}

// Generation's distribution over the whole adaptive vocabulary is the last position's, with or
// without targets to score, after a memory too.
TEST(TransformerXL, NextTokenLogProbsScoreTheLastTargetWithoutTargetsToo) {
  for (const auto& options : {txl_options(true), txl_options(false), tiny_learned()}) {
    torch::manual_seed(4);
    auto model = std::make_shared<TransformerXLImpl>(options);
    model->eval();
    const auto input = torch::randint(40, {8, 2});
    const auto target = torch::randint(40, {8, 2});
    const auto memory = model->forward(lm_batch(input, target), {}).mems;
    auto args = test::with_log_probs();
    args.next_token = true;
    const auto out = model->forward(lm_batch(input, target), memory, args);
    ASSERT_EQ(out.next_log_probs.sizes(), (std::vector<int64_t>{2, 40}));
    EXPECT_TRUE(torch::allclose(
        out.next_log_probs.gather(1, target[7].unsqueeze(1)).squeeze(1),
        out.log_probs[7],
        1e-5,
        1e-5));
    EXPECT_TRUE(torch::allclose(out.next_log_probs.logsumexp(1), torch::zeros({2}), 1e-5, 1e-5));
    sources::Batch tokens_only;
    tokens_only.tokens = input;
    ForwardArgs next;
    next.next_token = true;
    const auto alone = model->forward(tokens_only, memory, next);
    EXPECT_TRUE(alone.terms.empty());
    EXPECT_TRUE(torch::allclose(alone.next_log_probs, out.next_log_probs));
    EXPECT_TRUE(torch::equal(alone.mems[1], out.mems[1]));
    EXPECT_THROW(model->forward(tokens_only, memory, {}), c10::Error);
  }
}

// Generation's cache projects only the new positions; what comes out is what projecting
// [memory | segment] whole gives, post-LN and pre-LN, shared and per-layer biases, clamped.
TEST(TransformerXL, AProjectionCacheGivesTheOutputsOfTheWholeProjection) {
  auto pre_ln = txl_options(true, 5);
  pre_ln.stack().layer().attention().pre_lnorm(true);
  auto untied = txl_options(true, 7).untie_r(true);
  untied.lengths().clamp_len = 3;
  for (const auto& options : {txl_options(true, 5), pre_ln, untied}) {
    torch::manual_seed(5);
    auto model = std::make_shared<TransformerXLImpl>(options);
    model->eval();
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) { // a trained model's scale (see below)
      p.normal_(0.0, 0.3);
    }
    ProjectionCache cache;
    ForwardArgs plain;
    plain.next_token = true;
    ForwardArgs cached = plain;
    cached.cache = &cache;
    nn::Memory plain_mems;
    nn::Memory cached_mems;
    for (const int64_t len : {4, 1, 1, 3, 1, 1, 1}) {
      sources::Batch batch;
      batch.tokens = torch::randint(40, {len, 2});
      const auto a = model->forward(batch, plain_mems, plain);
      const auto b = model->forward(batch, cached_mems, cached);
      EXPECT_TRUE(torch::allclose(a.next_log_probs, b.next_log_probs, 1e-5, 1e-5)) << len;
      EXPECT_TRUE(torch::allclose(a.mems.back(), b.mems.back(), 1e-5, 1e-5));
      // The cache holds the keys and values of every row this call read.
      EXPECT_EQ(cache.layers[1].k.size(2), (plain_mems.empty() ? 0 : plain_mems[0].size(0)) + len);
      plain_mems = a.mems;
      cached_mems = b.mems;
    }
  }
}

// A memory-mode evaluation keeps the memory's projections between segments (the evaluator
// passes one cache per stream): every attention variant scores as with the whole projection,
// with a memory shorter than the segment (3 < 5), as long (5) and longer (12), and with ext_len.
TEST(TransformerXL, AnEvaluationCacheGivesTheLogProbsOfTheWholeProjection) {
  auto pre_ln = txl_options(true, 12);
  pre_ln.stack().layer().attention().pre_lnorm(true);
  auto untied = txl_options(true, 5).untie_r(true);
  untied.lengths().clamp_len = 3;
  auto same_length = txl_options(true, 12);
  same_length.lengths().same_length = true;
  auto extended = txl_options(true, 5); // the memory ends 2 rows before the last
  extended.lengths().ext_len = 2;
  for (const auto& options :
       {txl_options(true, 3),
        txl_options(true, 5),
        txl_options(true, 12),
        pre_ln,
        untied,
        same_length,
        extended}) {
    torch::manual_seed(6);
    auto model = std::make_shared<TransformerXLImpl>(options);
    model->eval();
    torch::NoGradGuard no_grad;
    // Weights as large as a trained model's, so that the memory weighs in the scores (at the
    // initial scale a spoilt cache moves them by 2e-5).
    for (auto& p : model->parameters()) {
      p.normal_(0.0, 0.3);
    }
    ProjectionCache cache;
    ForwardArgs cached = test::with_log_probs();
    cached.cache = &cache;
    nn::Memory plain_mems;
    nn::Memory cached_mems;
    for (int segment = 0; segment < 5; ++segment) {
      const auto batch = lm_batch(torch::randint(40, {5, 3}), torch::randint(40, {5, 3}));
      const auto a = model->forward(batch, plain_mems, test::with_log_probs());
      const auto b = model->forward(batch, cached_mems, cached);
      EXPECT_TRUE(torch::allclose(a.log_probs, b.log_probs, 1e-5, 1e-5))
          << "segment " << segment << ", mem_len " << options.lengths().mem_len;
      plain_mems = a.mems;
      cached_mems = b.mems;
    }
    // It holds the last call's [memory | segment] rows, and the next call reads them: spoilt,
    // they change what it scores.
    EXPECT_EQ(cache.layers[0].k.size(2), std::min<int64_t>(options.lengths().mem_len, 4 * 5) + 5);
    for (auto& layer : cache.layers) {
      layer.k.zero_();
      layer.v.zero_();
    }
    const auto batch = lm_batch(torch::randint(40, {5, 3}), torch::randint(40, {5, 3}));
    const auto change = (model->forward(batch, plain_mems, test::with_log_probs()).log_probs -
                         model->forward(batch, cached_mems, cached).log_probs)
                            .abs()
                            .max()
                            .item<double>();
    EXPECT_GT(change, 1e-2);
    // The rows are written into the cache in place, which gradients cannot flow through.
    torch::AutoGradMode with_gradients(true);
    EXPECT_THROW(model->forward(batch, cached_mems, cached), c10::Error);
  }
}

TEST(TransformerXL, ChangingAFutureTokenChangesNoEarlierLogProb) {
  for (const auto& options : {txl_options(true), txl_options(false), tiny_learned()}) {
    torch::manual_seed(3);
    auto model = std::make_shared<TransformerXLImpl>(options);
    model->eval();
    const auto input = torch::randint(40, {8, 2});
    const auto target = torch::randint(40, {8, 2});
    const auto memory = model->forward(lm_batch(input, target), {}).mems;
    const auto base =
        model->forward(lm_batch(input, target), memory, test::with_log_probs()).log_probs;
    auto changed = input.clone();
    changed[5][0] = (changed[5][0].item<int64_t>() + 1) % 40;
    const auto after =
        model->forward(lm_batch(changed, target), memory, test::with_log_probs()).log_probs;
    EXPECT_TRUE(torch::equal(base.narrow(0, 0, 5), after.narrow(0, 0, 5)));
    EXPECT_FALSE(torch::equal(base[5], after[5]));
  }
}

TEST(TransformerXL, SegmentWithMemoryEqualsOneLongPass) {
  torch::manual_seed(4);
  auto model = std::make_shared<TransformerXLImpl>(txl_options(true, 12));
  model->eval();
  const auto input = torch::randint(40, {10, 3});
  const auto target = torch::randint(40, {10, 3});
  const auto whole = model->forward(lm_batch(input, target), {}, test::with_log_probs()).log_probs;
  const auto first = model->forward(
      lm_batch(input.narrow(0, 0, 4), target.narrow(0, 0, 4)), {}, test::with_log_probs());
  const auto second = model->forward(
      lm_batch(input.narrow(0, 4, 6), target.narrow(0, 4, 6)), first.mems, test::with_log_probs());
  EXPECT_TRUE(torch::allclose(first.log_probs, whole.narrow(0, 0, 4), 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(second.log_probs, whole.narrow(0, 4, 6), 1e-5, 1e-5));
  ASSERT_EQ(second.mems.size(), 2u);
  EXPECT_EQ(second.mems[0].size(0), 10);
}

TEST(TransformerXL, LossIsOneTermSummingTheTokenLogProbs) {
  torch::manual_seed(5);
  auto model = std::make_shared<TransformerXLImpl>(txl_options());
  model->eval();
  const auto input = torch::randint(40, {5, 2});
  const auto target = torch::randint(40, {3, 2});
  const auto out = model->forward(lm_batch(input, target), {}, test::with_log_probs());
  ASSERT_EQ(out.terms.size(), 1u);
  EXPECT_EQ(out.terms[0].name, "lm");
  EXPECT_EQ(out.terms[0].kind, TermKind::kTokenNll);
  EXPECT_EQ(out.terms[0].count, 6);
  EXPECT_EQ(out.log_probs.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_NEAR(out.terms[0].sum.item<double>(), -out.log_probs.sum().item<double>(), 1e-5);
}

TEST(TransformerXL, MaskedTargetsCountNeitherInTheSumNorInTheCount) {
  torch::manual_seed(6);
  auto model = std::make_shared<TransformerXLImpl>(txl_options());
  model->eval();
  auto batch = lm_batch(torch::randint(40, {4, 2}), torch::randint(40, {4, 2}));
  batch.target_mask = torch::tensor({{true, false}, {true, true}, {false, true}, {true, false}});
  batch.n_targets = sources::count_targets(batch);
  const auto out = model->forward(batch, {}, test::with_log_probs());
  EXPECT_EQ(out.terms[0].count, 5);
  EXPECT_NEAR(
      out.terms[0].sum.item<double>(),
      -out.log_probs.masked_select(batch.target_mask).sum().item<double>(),
      1e-5);
}

TEST(TransformerXL, SpanOverridesTheModelsLengthsForOneCall) {
  torch::manual_seed(7);
  auto model = std::make_shared<TransformerXLImpl>(txl_options(true, 6));
  model->eval();
  const auto batch = lm_batch(torch::randint(40, {5, 2}), torch::randint(40, {5, 2}));
  ForwardArgs no_memory;
  no_memory.span.mem_len = 0;
  EXPECT_TRUE(model->forward(batch, {}, no_memory).mems.empty());
  ForwardArgs longer;
  longer.span.mem_len = 9;
  const auto first = model->forward(batch, {}, longer);
  EXPECT_EQ(model->forward(batch, first.mems, longer).mems[0].size(0), 9);
  EXPECT_EQ(model->forward(batch, first.mems).mems[0].size(0), 6);
}

TEST(TransformerXL, EachModuleDrawsItsParametersByItsRule) {
  torch::manual_seed(8);
  auto options = txl_options();
  options.stack().init(nn::InitOptions().normal_std(0.5).proj_std(0.01));
  auto model = std::make_shared<TransformerXLImpl>(options);
  for (const auto& p : model->named_parameters()) {
    const std::string& name = p.key();
    const auto& t = p.value();
    const double mean = t.mean().item<double>();
    const double std = t.numel() > 1 ? t.std().item<double>() : 0.0;
    if (name.find("layer_norm.weight") != std::string::npos) {
      EXPECT_NEAR(mean, 1.0, 0.5) << name; // normal(1, 0.5) gains
      EXPECT_GT(std, 0.2) << name;
    } else if (
        name.find(".bias") != std::string::npos || name.find("out_bias_") != std::string::npos ||
        name == "crit.cluster_bias") {
      EXPECT_EQ(t.abs().max().item<double>(), 0.0) << name;
    } else if (name.find("proj") != std::string::npos) {
      EXPECT_LT(std, 0.02) << name; // normal(0, 0.01)
      EXPECT_GT(std, 0.005) << name;
    } else {
      EXPECT_GT(std, 0.3) << name; // normal(0, 0.5): weights, u, v, clusters
      EXPECT_LT(std, 0.7) << name;
    }
  }
  // Uniform weights stay within the range; a fresh draw replaces every value.
  options.stack().init(nn::InitOptions().uniform(true).range(0.05));
  auto uniform = std::make_shared<TransformerXLImpl>(options);
  EXPECT_LE(
      uniform->layers[0]->named_parameters()["rel_attn.qkv_net.weight"].abs().max().item<double>(),
      0.05);
  const auto before = uniform->r_w_bias.clone();
  uniform->reset_parameters();
  EXPECT_FALSE(torch::equal(before, uniform->r_w_bias));
}

TEST(TransformerXL, GradientsReachEveryParameter) {
  torch::manual_seed(9);
  auto model = std::make_shared<TransformerXLImpl>(txl_options());
  // inputs and targets in every bin, so that every table and cluster takes part
  const auto input = torch::tensor({{1, 11}, {21, 39}, {2, 13}, {28, 3}, {4, 6}, {7, 8}});
  const auto target = torch::tensor({{0, 15}, {25, 39}, {5, 12}, {22, 1}, {2, 3}, {4, 5}});
  auto out = model->forward(lm_batch(input, target), {});
  out.terms[0].sum.backward();
  for (const auto& p : model->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << "no gradient for " << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0.0) << p.key();
  }
}

// The segment reads the last rows of each layer's table and the memory the rows before them;
// the memory itself keeps no positions (layer 0's is the bare embedding).
TEST(TransformerXL, LearnedPositionsReadTheTablesLastRows) {
  torch::manual_seed(10);
  auto model = std::make_shared<TransformerXLImpl>(tiny_learned());
  model->eval(); // no dropout: the memory can be compared with the embedding
  EXPECT_EQ(
      count_parameters(*model),
      count_parameters(TransformerXLImpl(txl_options(false))) + 2 * 16 * 16);
  const auto input = torch::randint(40, {8, 2});
  const auto target = torch::randint(40, {8, 2});
  const auto rows_with_gradient = [&](const nn::Memory& memory) {
    model->zero_grad();
    auto out = model->forward(lm_batch(input, target), memory);
    out.terms[0].sum.backward();
    const auto used = model->positions->table.grad().abs().sum(std::vector<int64_t>{0, 2}).gt(0);
    return std::make_pair(used, out.mems);
  };
  const auto [first, memory] = rows_with_gradient({});
  auto expected = torch::zeros({16}, torch::kBool);
  expected.narrow(0, 8, 8).fill_(true);
  EXPECT_TRUE(torch::equal(first, expected)) << first;
  ASSERT_EQ(memory[0].size(0), 6);
  EXPECT_TRUE(torch::allclose(memory[0], model->word_emb(input).narrow(0, 2, 6), 1e-6, 1e-6));
  const auto second = rows_with_gradient(memory).first;
  expected.narrow(0, 2, 6).fill_(true);
  EXPECT_TRUE(torch::equal(second, expected)) << second;
}

} // namespace
} // namespace xl::models
