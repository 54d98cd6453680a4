// Generation: the memory gives what re-reading the whole context gives, a seed gives the same
// tokens, and the filters keep the tokens they should.
#include "xl/eval/generate.h"

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "xl/models/char_transformer/model.h"
#include "xl/models/transformer_xl/model.h"
#include "xl/runtime/autocast.h"

namespace xl::eval {
namespace {

// Two relative layers over 30 words; a memory long enough to hold every token of the tests.
models::LanguageModel relative_model(int64_t mem_len) {
  torch::manual_seed(11);
  models::TransformerXLLengths lengths;
  lengths.mem_len = mem_len;
  auto model = std::make_shared<models::TransformerXLImpl>(
      models::TransformerXLOptions(
          {2, nn::DecoderLayerOptions(nn::AttentionOptions(16, 2, 8), 24)},
          nn::AdaptiveSoftmaxOptions(nn::AdaptiveOptions(30, 16, 16).cutoffs({8}).div_val(1)))
          .lengths(lengths));
  return model;
}

GenerateOptions options(int64_t tokens, uint64_t seed) {
  GenerateOptions o;
  o.max_tokens = tokens;
  o.segment = 4;
  o.window = 64;
  o.seed = seed;
  return o;
}

// With a memory that holds everything, one position per token over the memory is the same
// computation as re-reading the prompt and every drawn token: the same distributions, so the
// same draws.
TEST(Generate, TheMemoryGivesWhatReReadingTheWholeContextGives) {
  auto model = relative_model(64);
  const auto prompt = torch::randint(30, {10, 3});
  for (const double temperature : {0.0, 1.0}) {
    auto o = options(20, 5);
    o.sampling.temperature = temperature;
    o.sampling.top_p = 0.95;
    const auto carried = generate(*model, prompt, o);
    o.use_memory = false;
    const auto reread = generate(*model, prompt, o);
    EXPECT_TRUE(carried.used_memory);
    EXPECT_FALSE(reread.used_memory);
    EXPECT_TRUE(torch::equal(carried.tokens, reread.tokens)) << temperature;
    EXPECT_TRUE(torch::allclose(carried.log_probs, reread.log_probs, 1e-5, 1e-5));
    EXPECT_EQ(carried.tokens.sizes(), (std::vector<int64_t>{20, 3}));
  }
  // A short memory forgets: the window that re-reads the same few tokens sees other states.
  auto short_memory = relative_model(3);
  auto o = options(12, 5);
  const auto carried = generate(*short_memory, prompt, o);
  o.use_memory = false;
  o.window = 4;
  EXPECT_FALSE(torch::allclose(carried.log_probs, generate(*short_memory, prompt, o).log_probs));
}

TEST(Generate, TheSameSeedDrawsTheSameTokensAndTheModelKeepsItsMode) {
  auto model = relative_model(8);
  model->train();
  const auto prompt = torch::randint(30, {5, 2});
  const auto a = generate(*model, prompt, options(30, 1));
  const auto b = generate(*model, prompt, options(30, 1));
  const auto c = generate(*model, prompt, options(30, 2));
  EXPECT_TRUE(torch::equal(a.tokens, b.tokens));
  EXPECT_FALSE(torch::equal(a.tokens, c.tokens));
  EXPECT_TRUE(model->is_training());
  std::vector<int64_t> seen;
  const auto streamed = generate(*model, prompt, options(30, 1), [&](const torch::Tensor& ids) {
    seen.push_back(ids[1].item<int64_t>());
  });
  EXPECT_EQ(seen.size(), 30U);
  EXPECT_EQ(seen.back(), a.tokens[29][1].item<int64_t>());
}

// Under bf16 the forward passes run through autocast: the prompt's next-token distribution
// within bf16's precision of float32's, but not equal to it.
TEST(Generate, Bf16GeneratesThroughAutocastWithinItsPrecision) {
  auto model = relative_model(64);
  const auto prompt = torch::randint(30, {10, 3});
  auto o = options(4, 5);
  o.sampling.temperature = 0.0;
  const auto f32 = generate(*model, prompt, o);
  o.bf16 = true;
  const auto bf16 = generate(*model, prompt, o);
  EXPECT_TRUE(torch::equal(bf16.tokens[0], f32.tokens[0]));
  EXPECT_TRUE(torch::allclose(bf16.log_probs[0], f32.log_probs[0], 0.0, 2e-2));
  EXPECT_FALSE(torch::equal(bf16.log_probs[0], f32.log_probs[0]));
  EXPECT_FALSE(runtime::KeptWeightCasts::active());
}

// A model without memory but with a decoding cache (the character transformer) reads each new
// token alone over the cached keys and values while the context fits the window, then re-reads
// the window: the tokens and their log-probabilities are re-reading's, per-layer positions or
// one table, pre- or post-norm.
TEST(Generate, ADecodingCacheGivesWhatReReadingTheWindowGives) {
  for (const bool per_layer : {true, false}) {
    SCOPED_TRACE(per_layer ? "a position table per layer" : "one table, pre-norm");
    torch::manual_seed(2);
    models::CharLosses losses;
    losses.schedule.n_layer = 2;
    models::CharTransformerImpl model(
        models::CharTransformerOptions(
            20,
            {2, nn::DecoderLayerOptions(nn::AttentionOptions(16, 2, 8).pre_lnorm(!per_layer), 32)})
            .n_ctx(8)
            .per_layer_positions(per_layer)
            .losses(losses));
    const auto prompt = torch::randint(20, {3, 2});
    auto o = options(12, 3); // 3 + 12 tokens: the window of 8 slides after the fifth
    o.window = 8;
    const auto cached = generate(model, prompt, o);
    o.use_memory = false;
    const auto reread = generate(model, prompt, o);
    EXPECT_TRUE(cached.used_cache);
    EXPECT_FALSE(cached.used_memory);
    EXPECT_FALSE(reread.used_cache);
    EXPECT_TRUE(torch::equal(cached.tokens, reread.tokens));
    EXPECT_TRUE(torch::allclose(cached.log_probs, reread.log_probs, 1e-5, 1e-6));
    EXPECT_EQ(cached.tokens.sizes(), (std::vector<int64_t>{12, 2}));
  }
}

// Without memory or a decoding cache the window is re-read, and it cannot outgrow the position
// tables.
TEST(Generate, AWindowLongerThanThePositionTablesIsRefused) {
  torch::manual_seed(2);
  models::CharLosses losses;
  losses.schedule.n_layer = 2;
  models::CharTransformerImpl model(
      models::CharTransformerOptions(
          20, {2, nn::DecoderLayerOptions(nn::AttentionOptions(16, 2, 8), 32)})
          .n_ctx(6)
          .losses(losses));
  auto o = options(10, 3);
  o.window = 6; // the longest window its positions allow
  const auto out = generate(model, torch::randint(20, {9, 1}), o);
  EXPECT_FALSE(out.used_memory);
  EXPECT_EQ(out.tokens.sizes(), (std::vector<int64_t>{10, 1}));
  o.window = 7;
  EXPECT_THROW(generate(model, torch::randint(20, {9, 1}), o), c10::Error);
  o.use_memory = false;
  EXPECT_THROW(generate(model, torch::randint(20, {9, 1}), o), c10::Error);
}

// p = (0.5, 0.3, 0.15, 0.05), drawn 4000 times.
TEST(DrawTokens, TemperatureTopKAndTopPKeepTheTokensTheyShould) {
  const auto log_probs = torch::tensor({0.5, 0.3, 0.15, 0.05}).log().unsqueeze(0).repeat({4000, 1});
  auto generator = at::make_generator<at::CPUGeneratorImpl>(7);
  const auto counts = [&](const SamplingOptions& o) {
    return torch::bincount(draw_tokens(log_probs, o, generator), {}, 4).to(torch::kDouble) / 4000.0;
  };
  EXPECT_TRUE(torch::equal(
      draw_tokens(log_probs, {0.0, 0, 1.0}, generator), torch::zeros({4000}, torch::kLong)));
  const auto all = counts({1.0, 0, 1.0});
  EXPECT_TRUE(
      torch::allclose(all, torch::tensor({0.5, 0.3, 0.15, 0.05}, torch::kDouble), 0.0, 0.03));
  const auto top2 = counts({1.0, 2, 1.0});
  EXPECT_TRUE(
      torch::allclose(top2, torch::tensor({0.625, 0.375, 0.0, 0.0}, torch::kDouble), 0.0, 0.03));
  // 0.5 + 0.3 reaches 0.7: two tokens; 0.5 alone reaches 0.5.
  EXPECT_TRUE(torch::allclose(
      counts({1.0, 0, 0.7}), torch::tensor({0.625, 0.375, 0.0, 0.0}, torch::kDouble), 0.0, 0.03));
  EXPECT_EQ(counts({1.0, 0, 0.5})[0].item<double>(), 1.0);
  // A high temperature flattens the distribution.
  EXPECT_GT(counts({4.0, 0, 1.0})[3].item<double>(), 0.15);
  EXPECT_THROW(draw_tokens(log_probs, {1.0, 0, 0.0}, generator), c10::Error);
}

} // namespace
} // namespace xl::eval
