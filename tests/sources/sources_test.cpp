// Batch sources: which tokens each batch holds, pass boundaries, and exact continuation from a
// checkpoint; batches split into chunks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>

#include "test_util.h"
#include "xl/sources/batch.h"
#include "xl/sources/dataset.h"
#include "xl/sources/ordered_segments.h"
#include "xl/sources/windows.h"
#include "xl/util/error.h"

namespace xl::sources {
namespace {

using ::testing::HasSubstr;

// Token i is i: positions read straight back from the batches.
formats::TokenTensor counting(int64_t n) {
  return formats::TokenTensor(torch::arange(n, torch::kLong), "counting");
}

TEST(OrderedSegments, StreamsAreContiguousAndTargetsShiftByOne) {
  const auto tokens = counting(23);
  sources::OrderedSegments source(tokens, 2, 4);
  EXPECT_EQ(source.n_step(), 11);
  EXPECT_EQ(source.batches_per_pass(), 3); // 10 targets per stream: 4 + 4 + 2
  EXPECT_TRUE(source.continues_streams());
  const auto s0 = *source.next();
  ASSERT_EQ(s0.tokens.sizes(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(s0.n_targets, 8);
  EXPECT_EQ(s0.tokens[0][0].item<int64_t>(), 0);
  EXPECT_EQ(s0.tokens[0][1].item<int64_t>(), 11); // stream 1 starts at 11
  EXPECT_EQ(s0.targets[3][1].item<int64_t>(), 15);
  source.next();
  const auto s2 = *source.next();
  EXPECT_EQ(s2.tokens.size(0), 2);
  EXPECT_EQ(s2.targets[1][0].item<int64_t>(), 10);
  EXPECT_FALSE(source.next().has_value()); // the pass is over
  EXPECT_EQ(source.epoch(), 1);
  EXPECT_TRUE(torch::equal(sources::next_cycling(source).tokens, s0.tokens));
}

TEST(OrderedSegments, ExtendedContextPrecedesTheSegment) {
  const auto tokens = counting(41);
  sources::OrderedSegments source(tokens, 1, 5, 3);
  source.next();
  const auto s1 = *source.next();
  ASSERT_EQ(s1.tokens.size(0), 8); // 3 context + 5
  EXPECT_EQ(s1.tokens[0][0].item<int64_t>(), 2);
  EXPECT_EQ(s1.targets[0][0].item<int64_t>(), 6);
  EXPECT_EQ(s1.n_targets, 5);
}

TEST(OrderedSegments, ACheckpointedPositionContinuesExactly) {
  const auto tokens = counting(41);
  sources::OrderedSegments a(tokens, 2, 3);
  a.next();
  a.next();
  sources::OrderedSegments b(tokens, 2, 3);
  test::transfer(a, b);
  EXPECT_TRUE(torch::equal(a.next()->tokens, b.next()->tokens));
  sources::OrderedSegments other(tokens, 2, 4);
  try {
    test::transfer(a, other);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("2 streams x 3 tokens"));
    EXPECT_THAT(e.what(), HasSubstr("2 streams x 4 tokens"));
  }
}

TEST(OrderedSegments, TooFewTokensIsAClearError) {
  const auto tokens = counting(5);
  try {
    sources::OrderedSegments source(tokens, 4, 2);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("counting holds 5 tokens"));
  }
}

// Every target t >= window, scored once, from exactly the `window` tokens before it (stride 1)
// or from at least window - stride + 1 of them.
TEST(SlidingWindows, ScoreEveryTargetFromItsWindowWhateverTheStride) {
  const int64_t n = 50;
  const int64_t window = 8;
  const auto tokens = counting(n);
  for (const int64_t stride : {1, 3, 8}) {
    SCOPED_TRACE("stride " + std::to_string(stride));
    sources::SlidingWindows source(tokens, window, stride, 4);
    EXPECT_FALSE(source.continues_streams());
    EXPECT_EQ(source.metric_qualifier(), stride == 1 ? "" : "@stride=" + std::to_string(stride));
    std::vector<int64_t> scored;
    int64_t batches = 0;
    while (auto batch = source.next()) {
      ++batches;
      ASSERT_EQ(batch->tokens.size(0), window);
      const int64_t s = batch->targets.size(0);
      EXPECT_EQ(batch->n_targets, batch->targets.numel());
      for (int64_t w = 0; w < batch->tokens.size(1); ++w) {
        for (int64_t i = 0; i < s; ++i) {
          const int64_t target = batch->targets[i][w].item<int64_t>();
          // the target follows the input at its position
          EXPECT_EQ(target, batch->tokens[window - s + i][w].item<int64_t>() + 1);
          // the window ends right before the window's last target
          EXPECT_EQ(
              batch->tokens[window - 1][w].item<int64_t>() + 1,
              batch->targets[s - 1][w].item<int64_t>());
          scored.push_back(target);
        }
      }
    }
    EXPECT_EQ(batches, source.batches_per_pass());
    std::vector<int64_t> expected;
    for (int64_t t = window; t < n; ++t) {
      expected.push_back(t);
    }
    EXPECT_EQ(scored, expected);
  }
}

TEST(SlidingWindows, ACheckpointedPositionContinuesExactly) {
  const auto tokens = counting(60);
  sources::SlidingWindows a(tokens, 6, 2, 3);
  a.next();
  sources::SlidingWindows b(tokens, 6, 2, 3);
  test::transfer(a, b);
  EXPECT_TRUE(torch::equal(a.next()->targets, b.next()->targets));
}

// Every target's place in the text (target_index), for listing each token's score: the targets
// themselves when token i is i.
TEST(TargetIndex, PlacesEveryTargetWhereItSitsInTheText) {
  const auto tokens = counting(47);
  const auto check = [](sources::BatchSource& source) {
    while (auto batch = source.next()) {
      ASSERT_TRUE(batch->target_index.defined());
      EXPECT_TRUE(torch::equal(batch->target_index, batch->targets));
    }
  };
  sources::OrderedSegments segments(tokens, 3, 4, 2);
  check(segments);
  sources::SlidingWindows windows(tokens, 8, 3, 2);
  check(windows);
  sources::SlidingWindows led(tokens, 8, 3, 2, /*lead=*/true);
  check(led);
}

// With a lead window (a user's text), the targets before the first full window are scored too,
// each from the tokens before it; a text no longer than a window is that window alone.
TEST(SlidingWindows, ALeadWindowScoresTheTargetsBeforeTheFirstFullOne) {
  for (const int64_t n : {50, 8, 5, 2}) {
    SCOPED_TRACE("tokens " + std::to_string(n));
    const auto tokens = counting(n);
    sources::SlidingWindows source(tokens, 8, 3, 4, /*lead=*/true);
    std::vector<int64_t> scored;
    int64_t batches = 0;
    while (auto batch = source.next()) {
      ++batches;
      EXPECT_TRUE(torch::equal(
          batch->targets,
          batch->tokens.narrow(
              0, batch->tokens.size(0) - batch->targets.size(0), batch->targets.size(0)) +
              1));
      const auto flat = batch->targets.t().reshape({-1});
      scored.insert(
          scored.end(), flat.data_ptr<int64_t>(), flat.data_ptr<int64_t>() + flat.numel());
    }
    EXPECT_EQ(batches, source.batches_per_pass());
    std::vector<int64_t> every(static_cast<size_t>(n - 1));
    std::iota(every.begin(), every.end(), 1);
    EXPECT_EQ(scored, every);
    EXPECT_EQ(source.epoch(), 1);
  }
  EXPECT_THAT(
      test::user_error([] {
        const auto one = counting(1);
        sources::SlidingWindows(one, 8, 1, 1, true);
      }),
      HasSubstr("holds 1 tokens"));
}

// A user's text too short for eval.batch_size streams of a segment each is scored in fewer, down
// to one stream of a shorter segment; in vanilla mode every token but the first is scored.
TEST(TextEvalBatches, AShortTextIsScoredInFewerOrShorterBatches) {
  config::Config c;
  c.train.tgt_len = 8;
  c.eval.batch_size = 3;
  c.eval.tgt_len = 4;
  const auto fitted = [&](int64_t n) {
    const auto tokens = counting(n);
    std::string how;
    auto batches = text_eval_batches(c, tokens, 0, c.eval.batch_size, how);
    int64_t targets = 0;
    while (auto batch = batches.source->next()) {
      targets += batch->n_targets;
    }
    return std::pair{how, targets};
  };
  EXPECT_EQ(fitted(15), std::pair(std::string(), int64_t{12})); // 3 streams of 5
  EXPECT_THAT(fitted(14).first, HasSubstr("counting holds 14 tokens, too few for 3 streams"));
  EXPECT_EQ(fitted(14).second, 12); // 2 streams of 7
  EXPECT_THAT(fitted(4).first, HasSubstr("scored as one stream of 3 targets"));
  EXPECT_EQ(fitted(2).second, 1);
  EXPECT_THAT(
      test::user_error([&] { fitted(1); }),
      HasSubstr("counting holds 1 token: a language model scores a text of at least 2"));
  c.eval.mode = config::EvalMode::kVanilla;
  EXPECT_EQ(fitted(30), std::pair(std::string(), int64_t{29}));
  EXPECT_THAT(fitted(6).first, HasSubstr("no more than one window of 8: scored as one window"));
  EXPECT_EQ(fitted(6).second, 5);
}

TEST(RandomWindows, DrawWindowsFromTheWholeSplitAndResumeTheirRandomState) {
  const auto tokens = counting(1000);
  sources::RandomWindows a(tokens, 16, 8, 42);
  EXPECT_FALSE(a.continues_streams());
  EXPECT_EQ(a.batches_per_pass(), 8); // ceil(999 / 128)
  std::set<int64_t> starts;
  for (int i = 0; i < 8; ++i) {
    const auto batch = *a.next();
    ASSERT_EQ(batch.tokens.sizes(), (std::vector<int64_t>{16, 8}));
    EXPECT_EQ(batch.n_targets, 128);
    EXPECT_TRUE(torch::equal(batch.targets, batch.tokens + 1));
    // each window is 16 consecutive tokens
    EXPECT_TRUE(torch::equal(
        batch.tokens - batch.tokens[0], torch::arange(16).unsqueeze(1).expand({16, 8})));
    EXPECT_LE(batch.targets.max().item<int64_t>(), 999);
    for (int64_t w = 0; w < 8; ++w) {
      starts.insert(batch.tokens[0][w].item<int64_t>());
    }
  }
  EXPECT_GT(starts.size(), 50u);
  EXPECT_FALSE(a.next().has_value());
  EXPECT_EQ(a.epoch(), 1);
  sources::RandomWindows b(tokens, 16, 8, 42);
  test::transfer(a, b);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(torch::equal(sources::next_cycling(a).tokens, sources::next_cycling(b).tokens));
  }
  sources::RandomWindows other_seed(tokens, 16, 8, 43);
  sources::RandomWindows same_seed(tokens, 16, 8, 42);
  EXPECT_FALSE(torch::equal(other_seed.next()->tokens, same_seed.next()->tokens));
}

TEST(Batch, SplitsEveryFieldAlongItsBatchDimensionAndRecountsTargets) {
  sources::Batch batch;
  batch.tokens = torch::arange(12).view({3, 4});
  batch.targets = torch::arange(8).view({2, 4});
  batch.target_mask = torch::tensor({{true, true, false, false}, {true, false, false, true}});
  batch.perm_mask = torch::zeros({3, 3, 4}, torch::kBool);
  batch.labels = torch::arange(4);
  batch.n_targets = sources::count_targets(batch);
  EXPECT_EQ(batch.n_targets, 4);
  const auto parts = batch.split(2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].n_targets, 3);
  EXPECT_EQ(parts[1].n_targets, 1);
  EXPECT_EQ(parts[1].tokens.sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(parts[1].tokens[0][0].item<int64_t>(), 2);
  EXPECT_EQ(parts[1].perm_mask.sizes(), (std::vector<int64_t>{3, 3, 2}));
  EXPECT_EQ(parts[1].labels[0].item<int64_t>(), 2);
  EXPECT_FALSE(parts[1].segment_ids.defined());
  EXPECT_THROW(batch.split(3), c10::Error);
}

} // namespace
} // namespace xl::sources
