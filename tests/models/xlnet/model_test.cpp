// XLNet: the relative shift, what each stream may see, padding, memory, parameter counts.
#include "xl/models/xlnet/model.h"

#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"

namespace xl::models {
namespace {

// Scores whose column c holds the distance it encodes (K - c) give back the distance of each
// (query, key) pair: (M + p) - j, in both directions.
TEST(XLNetRelShift, GivesTheSignedDistanceOfEveryQueryKeyPair) {
  for (const auto& [mlen, qlen] : {std::pair<int64_t, int64_t>{0, 4}, {3, 4}, {5, 2}}) {
    const int64_t klen = mlen + qlen;
    const auto distances = torch::arange(klen, -qlen, -1, torch::kFloat).expand({2, 3, qlen, -1});
    const auto positions = torch::arange(qlen).unsqueeze(0);
    const auto shifted = nn::xlnet_rel_shift(distances, positions, klen);
    ASSERT_EQ(shifted.sizes(), (std::vector<int64_t>{2, 3, qlen, klen}));
    for (int64_t i = 0; i < qlen; ++i) {
      for (int64_t j = 0; j < klen; ++j) {
        EXPECT_EQ(shifted[1][2][i][j].item<float>(), mlen + i - j)
            << "mlen " << mlen << " query " << i << " key " << j;
      }
    }
    // Queries at other positions (the query stream's) read the rows of their positions.
    const auto some = torch::tensor({{qlen - 1, int64_t{0}}});
    const auto picked = nn::xlnet_rel_shift(
        torch::arange(klen, -qlen, -1, torch::kFloat).expand({1, 1, 2, -1}), some, klen);
    for (int64_t j = 0; j < klen; ++j) {
      EXPECT_EQ(picked[0][0][0][j].item<float>(), mlen + qlen - 1 - j);
      EXPECT_EQ(picked[0][0][1][j].item<float>(), mlen - j);
    }
  }
}

XLNetOptions small(int64_t n_class = 0, int64_t mem_len = 0) {
  XLNetLengths lengths;
  lengths.mem_len = mem_len;
  lengths.reuse_len = 3;
  // d_head 8 with d_model 24 and 2 heads: attention narrower than the model, which Hugging
  // Face cannot express.
  return XLNetOptions(
             50,
             models::StackShape(
                 2,
                 nn::DecoderLayerOptions(nn::AttentionOptions(24, 2, 8), 40)
                     .activation(nn::Activation::kGeluTanh))
                 .init(nn::InitOptions().normal_std(0.3).unit_layer_norm(true)))
      .untie_r(true)
      .n_class(n_class)
      .lengths(lengths);
}

// A factorisation order: positions of rank 0 are context, seen by everyone; the others are
// targets, each hidden from the targets of lower or equal rank and from the context.
sources::Batch permuted(const torch::Tensor& tokens, const torch::Tensor& rank) {
  const int64_t qlen = tokens.size(0);
  const int64_t bsz = tokens.size(1);
  sources::Batch batch;
  batch.tokens = tokens;
  batch.segment_ids = torch::zeros_like(tokens);
  // [L, L, B]: rank[j] > 0 and rank[j] >= rank[i]
  batch.perm_mask = rank.unsqueeze(0).ge(rank.unsqueeze(1)).logical_and(rank.unsqueeze(0).gt(0));
  batch.target_mapping = torch::eye(qlen).unsqueeze(2).expand({qlen, qlen, bsz});
  batch.targets = tokens;
  batch.n_targets = tokens.numel();
  return batch;
}

// The query stream predicts a token from the context and what precedes it in the factorisation
// order only: changing the token itself or a later target leaves its log-prob alone, through
// every layer (the content stream never leaks it either); the context and earlier targets change
// it.
TEST(XLNet, APredictionSeesOnlyWhatPrecedesItInTheOrder) {
  torch::manual_seed(3);
  XLNetImpl model(small());
  model.eval();
  torch::NoGradGuard no_grad;
  const int64_t qlen = 7;
  const auto tokens = torch::randint(50, {qlen, 2});
  // two context positions (rank 0) per row
  const auto rank = torch::stack(
      {torch::randperm(qlen).sub(1).clamp_min(0), torch::randperm(qlen).sub(1).clamp_min(0)},
      1); // [L, B]
  const auto batch = permuted(tokens, rank);
  const auto base = model.forward(batch, {}, test::with_log_probs()).log_probs;
  for (int64_t i = 0; i < qlen; ++i) {
    const int64_t rank_i = rank[i][0].item<int64_t>();
    if (rank_i == 0) {
      continue;
    }
    for (int64_t j = 0; j < qlen; ++j) {
      auto changed = batch;
      changed.tokens = tokens.clone();
      changed.tokens[j][0] = (tokens[j][0].item<int64_t>() + 1) % 50;
      // the targets stay the original tokens: only the inputs change
      const auto out = model.forward(changed, {}, test::with_log_probs()).log_probs;
      if (rank[j][0].item<int64_t>() >= rank_i) {
        EXPECT_TRUE(torch::allclose(out[i][0], base[i][0], 0.0, 1e-6))
            << "prediction " << i << " saw position " << j;
      } else {
        EXPECT_FALSE(torch::allclose(out[i][0], base[i][0], 0.0, 1e-6))
            << "prediction " << i << " ignored position " << j;
      }
      // the other row never changes
      EXPECT_TRUE(torch::allclose(out.select(1, 1), base.select(1, 1)));
    }
  }
}

// Padding rows of target_mapping count nothing and change nothing.
TEST(XLNet, PaddedPredictionsAreNotCounted) {
  torch::manual_seed(4);
  XLNetImpl model(small());
  model.eval();
  torch::NoGradGuard no_grad;
  const auto tokens = torch::randint(50, {6, 1});
  auto batch = permuted(tokens, torch::arange(6).unsqueeze(1));
  // position 0 is context; a padded prediction and the first target see only it
  const auto full = model.forward(batch, {}, test::with_log_probs());
  batch.target_mapping = batch.target_mapping.clone();
  batch.target_mapping[5].zero_();
  batch.target_mask = torch::ones({6, 1}, torch::kBool);
  batch.target_mask[5] = false;
  batch.n_targets = 5;
  const auto padded = model.forward(batch, {}, test::with_log_probs());
  EXPECT_EQ(padded.terms[0].count, 5);
  EXPECT_TRUE(torch::allclose(padded.log_probs.narrow(0, 0, 5), full.log_probs.narrow(0, 0, 5)));
  EXPECT_NEAR(
      padded.terms[0].sum.item<double>(),
      -full.log_probs.narrow(0, 0, 5).sum().item<double>(),
      1e-4);
}

sources::Batch classification(const torch::Tensor& tokens, int64_t pad) {
  sources::Batch batch;
  batch.tokens = tokens;
  batch.padding = torch::zeros(tokens.sizes(), torch::kBool);
  batch.padding.narrow(0, 0, pad).fill_(true);
  batch.segment_ids = torch::zeros_like(tokens);
  batch.segment_ids[tokens.size(0) - 1].fill_(2);
  batch.labels = torch::tensor({1, 0});
  batch.n_targets = 2;
  return batch;
}

// Left padding: whatever the 3 pad positions of `tokens` [8, 2] hold and however many there
// are (a batch cut to its longest row, or a longer one), `model` reads the same sequence; the
// pad tokens count once they are not flagged. Returns the output for `tokens`.
ModelOutput expect_padding_ignored(XLNetImpl& model, const torch::Tensor& tokens) {
  const auto close = [&](const sources::Batch& batch, const torch::Tensor& logits) {
    return torch::allclose(model.forward(batch, {}, {}).logits, logits, 1e-5, 1e-6);
  };
  auto a = model.forward(classification(tokens, 3), {}, {});
  auto other = tokens.clone();
  other.narrow(0, 0, 3).fill_(7);
  EXPECT_TRUE(close(classification(other, 3), a.logits));
  EXPECT_TRUE(close(classification(tokens.narrow(0, 2, 6), 1), a.logits));
  const auto longer = torch::cat({torch::full({2, 2}, 7, torch::kLong), other});
  EXPECT_TRUE(close(classification(longer, 5), a.logits));
  auto unflagged = classification(other, 3);
  unflagged.padding.zero_();
  EXPECT_FALSE(close(unflagged, a.logits));
  return a;
}

TEST(XLNet, ClassificationIgnoresPadding) {
  torch::manual_seed(5);
  XLNetImpl model(small(3));
  model.eval();
  torch::NoGradGuard no_grad;
  const auto a = expect_padding_ignored(model, torch::randint(50, {8, 2}));
  ASSERT_EQ(a.logits.sizes(), (std::vector<int64_t>{2, 3}));
  ASSERT_EQ(a.terms.size(), 2U);
  EXPECT_EQ(a.terms[0].name, "cls");
  EXPECT_EQ(a.terms[0].count, 2);
  EXPECT_NEAR(
      a.terms[0].sum.item<double>(),
      torch::nn::functional::cross_entropy(
          a.logits,
          torch::tensor({1, 0}),
          torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
          .item<double>(),
      1e-5);
  EXPECT_EQ(a.terms[1].kind, TermKind::kAccuracy);
  EXPECT_EQ(a.terms[1].weight, 0.0);
}

// The mean summary averages the real positions, padding left out (expect_padding_ignored), and
// reads other numbers than the last position does.
TEST(XLNet, MeanSummaryIgnoresPadding) {
  torch::manual_seed(5);
  XLNetImpl model(small(3).summary(SequenceSummary::kMean));
  model.eval();
  torch::NoGradGuard no_grad;
  const auto tokens = torch::randint(9, 50, {8, 2});
  const auto a = expect_padding_ignored(model, tokens);
  XLNetImpl last(small(3));
  last.eval();
  const auto params = model.named_parameters();
  for (auto& item : last.named_parameters()) {
    item.value().copy_(params[item.key()]);
  }
  EXPECT_FALSE(torch::allclose(
      last.forward(classification(tokens, 3), {}, {}).logits, a.logits, 1e-5, 1e-6));
}

// The memory holds the first reuse_len inputs of each layer, the last mem_len kept, detached.
TEST(XLNet, MemoryKeepsTheReusedPositions) {
  torch::manual_seed(6);
  XLNetImpl model(small(0, 5));
  const auto tokens = torch::randint(50, {6, 2});
  const auto batch = permuted(tokens, torch::randperm(6).unsqueeze(1).expand({6, 2}));
  const auto first = model.forward(batch, {}, {});
  ASSERT_EQ(first.mems.size(), 2U);
  EXPECT_EQ(first.mems[0].size(0), 3); // reuse_len 3 of 6
  EXPECT_FALSE(first.mems[0].requires_grad());
  EXPECT_TRUE(
      torch::allclose(first.mems[0], model.word_embedding(tokens.narrow(0, 0, 3)).detach()));
  const auto second = model.forward(batch, first.mems, {});
  EXPECT_EQ(second.mems[0].size(0), 5); // 3 + 3, the last 5 kept
  EXPECT_TRUE(torch::allclose(second.mems[0].narrow(0, 0, 2), first.mems[0].narrow(0, 1, 2)));
}

// A memory-mode evaluation keeps each layer's key and value projections of the memory, and the
// position projections, between segments (ProjectionCache): the same log-probs and memories as
// projecting them again, with the memory ending before the rows not reused (reuse_len 3 of 6),
// shorter (5) and longer (9) than the segment; a spoilt cache changes the scores.
TEST(XLNet, AnEvaluationCacheGivesTheLogProbsOfTheWholeProjection) {
  for (const int64_t mem_len : {5, 9}) {
    torch::manual_seed(7);
    XLNetImpl model(small(0, mem_len));
    model.eval();
    torch::NoGradGuard no_grad;
    ProjectionCache cache;
    ForwardArgs cached = test::with_log_probs();
    cached.cache = &cache;
    nn::Memory plain_mems;
    nn::Memory cached_mems;
    sources::Batch batch;
    for (int segment = 0; segment < 4; ++segment) {
      batch = permuted(torch::randint(50, {6, 2}), torch::randperm(6).unsqueeze(1).expand({6, 2}));
      const auto a = model.forward(batch, plain_mems, test::with_log_probs());
      const auto b = model.forward(batch, cached_mems, cached);
      EXPECT_TRUE(torch::allclose(a.log_probs, b.log_probs, 1e-5, 1e-5))
          << "segment " << segment << ", mem_len " << mem_len;
      EXPECT_TRUE(torch::allclose(a.mems.back(), b.mems.back(), 1e-5, 1e-5));
      plain_mems = a.mems;
      cached_mems = b.mems;
    }
    for (auto& layer : cache.layers) {
      layer.k.zero_();
      layer.v.zero_();
    }
    const auto change = (model.forward(batch, plain_mems, test::with_log_probs()).log_probs -
                         model.forward(batch, cached_mems, cached).log_probs)
                            .abs()
                            .max()
                            .item<double>();
    EXPECT_GT(change, 1e-2) << "mem_len " << mem_len;
  }
}

TEST(XLNet, RefusesABatchWithoutPredictionsOrLabels) {
  XLNetImpl model(small());
  sources::Batch batch;
  batch.tokens = torch::zeros({4, 2}, torch::kLong);
  EXPECT_THROW(model.forward(batch, {}, {}), c10::Error);
}

// The Korean mini XLNet of the tutorial (ratsgo): 3 layers of d_model 512, 8 heads of 32, d_inner
// 2048, per-layer biases, 32k pieces: 16,384,000 embedding + 3 x 2,757,632 per layer + 3 x 3 x
// 256 biases + 512 mask_emb + 32,000 LM bias.
TEST(XLNetParameters, MiniKoreanMatchesTheTutorialArithmetic) {
  const auto config = config::load(std::string(test::kSourceDir) + "/configs/xlnet/mini_ko.yaml");
  const auto model = build_model(config, 32000);
  EXPECT_EQ(count_parameters(*model), 24691712);
}

} // namespace
} // namespace xl::models
