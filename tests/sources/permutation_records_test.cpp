// XLNet pretraining records: the permutation mask's rules checked over many sampled records,
// whole-word spans, stream layout, exact resumption and the option errors (the permutation of one
// record alone: permutation_masking_test.cpp).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "test_util.h"
#include "xl/prep/sentencepiece_training.h"
#include "xl/sources/permutation_records.h"
#include "xl/util/error.h"

namespace xl::sources {
namespace {

using test::user_error;
using ::testing::HasSubstr;

constexpr int64_t kVocab = 100;

// Pieces 9..99, those divisible by 3 continuing a word; sentences of 2..12 pieces, and an
// <eod> glued to a sentence now and then.
struct Synthetic {
  formats::SentenceTokens tokens;
  std::vector<bool> starts;
};

Synthetic synthetic(int64_t n, uint64_t seed) {
  Synthetic s;
  for (int64_t id = 0; id < kVocab; ++id) {
    s.starts.push_back(id < 9 || id % 3 != 0);
  }
  std::mt19937_64 rng(seed);
  uint8_t sent = 0;
  while (static_cast<int64_t>(s.tokens.ids.size()) < n) {
    const auto len = static_cast<int64_t>(2 + rng() % 11);
    for (int64_t k = 0; k < len; ++k) {
      s.tokens.ids.push_back(static_cast<int64_t>(9 + rng() % (kVocab - 9)));
      s.tokens.sent_ids.push_back(sent);
    }
    if (rng() % 5 == 0) {
      s.tokens.ids.push_back(formats::kEodId);
      s.tokens.sent_ids.push_back(sent);
    }
    sent ^= 1U;
  }
  s.tokens.ids.resize(static_cast<size_t>(n));
  s.tokens.sent_ids.resize(static_cast<size_t>(n));
  s.tokens.name = "synthetic";
  return s;
}

// 4 rows (2 streams, forward and backward) of records of 24: 12 reused, 8 predictions.
sources::PermutationOptions four_rows() {
  sources::PermutationOptions o;
  o.batch_size = 4;
  o.seq_len = 24;
  o.reuse_len = 12;
  o.perm_size = 6;
  o.num_predict = 8;
  return o;
}

void expect_same(const sources::Batch& a, const sources::Batch& b) {
  EXPECT_TRUE(torch::equal(a.tokens, b.tokens));
  EXPECT_TRUE(torch::equal(a.segment_ids, b.segment_ids));
  EXPECT_TRUE(torch::equal(a.perm_mask, b.perm_mask));
  EXPECT_TRUE(torch::equal(a.target_mapping, b.target_mapping));
  EXPECT_TRUE(torch::equal(a.targets, b.targets));
  EXPECT_TRUE(torch::equal(a.target_mask, b.target_mask));
  EXPECT_EQ(a.n_targets, b.n_targets);
}

// Every rule of a batch, row by row.
void check_batch(
    const sources::Batch& batch,
    const sources::PermutationOptions& o,
    const std::vector<bool>& starts) {
  const int64_t len = o.seq_len;
  const int64_t reuse = o.reuse_len;
  const int64_t p = o.num_predict;
  ASSERT_EQ(batch.tokens.sizes(), (std::vector<int64_t>{len, o.batch_size}));
  ASSERT_EQ(batch.segment_ids.sizes(), batch.tokens.sizes());
  ASSERT_EQ(batch.perm_mask.sizes(), (std::vector<int64_t>{len, len, o.batch_size}));
  ASSERT_EQ(batch.target_mapping.sizes(), (std::vector<int64_t>{p, len, o.batch_size}));
  ASSERT_EQ(batch.targets.sizes(), (std::vector<int64_t>{p, o.batch_size}));
  ASSERT_EQ(batch.target_mask.scalar_type(), torch::kBool);
  EXPECT_EQ(batch.n_targets, batch.target_mask.sum().item<int64_t>());
  const auto tokens = batch.tokens.accessor<int64_t, 2>();
  const auto seg = batch.segment_ids.accessor<int64_t, 2>();
  const auto perm = batch.perm_mask.accessor<bool, 3>();
  const auto mapping = batch.target_mapping.accessor<float, 3>();
  const auto targets = batch.targets.accessor<int64_t, 2>();
  const auto tmask = batch.target_mask.accessor<bool, 2>();
  for (int64_t b = 0; b < o.batch_size; ++b) {
    SCOPED_TRACE("row " + std::to_string(b));
    // Layout: [reuse | A <sep> B <sep> <cls>], segments 0 | 0..0 0 1..1 1 2.
    EXPECT_EQ(tokens[len - 1][b], formats::kClsId);
    EXPECT_EQ(tokens[len - 2][b], formats::kSepId);
    EXPECT_EQ(seg[len - 1][b], 2);
    EXPECT_EQ(seg[len - 2][b], 1);
    int64_t first_sep = -1;
    for (int64_t i = reuse; i < len - 2; ++i) {
      if (tokens[i][b] == formats::kSepId) {
        EXPECT_EQ(first_sep, -1);
        first_sep = i;
      }
    }
    ASSERT_GE(first_sep, reuse);
    for (int64_t i = 0; i < len - 2; ++i) {
      EXPECT_EQ(seg[i][b], i <= first_sep ? 0 : 1) << i;
    }
    // Targets: target_mapping one-hot at ascending positions, then zero rows.
    std::vector<uint8_t> target(static_cast<size_t>(len));
    int64_t count = 0;
    int64_t last = -1;
    for (int64_t k = 0; k < p; ++k) {
      int64_t hot = -1;
      float sum = 0;
      for (int64_t i = 0; i < len; ++i) {
        sum += mapping[k][i][b];
        if (mapping[k][i][b] == 1.0F) {
          hot = i;
        }
      }
      if (tmask[k][b]) {
        EXPECT_EQ(k, count) << "padding before a target";
        ASSERT_GE(hot, 0);
        EXPECT_EQ(sum, 1.0F);
        EXPECT_GT(hot, last);
        last = hot;
        EXPECT_EQ(targets[k][b], tokens[hot][b]);
        EXPECT_NE(tokens[hot][b], formats::kSepId);
        EXPECT_NE(tokens[hot][b], formats::kClsId);
        target[static_cast<size_t>(hot)] = 1;
        ++count;
      } else {
        EXPECT_EQ(sum, 0.0F);
        EXPECT_EQ(targets[k][b], 0);
      }
    }
    int64_t first_half = 0;
    for (int64_t i = 0; i < reuse; ++i) {
      first_half += target[static_cast<size_t>(i)];
    }
    EXPECT_LE(first_half, p - p / 2);
    EXPECT_LE(count - first_half, p / 2);
    // Hidden: targets and functional tokens; the rest is ordinary context.
    const auto hidden = [&](int64_t i) {
      return target[static_cast<size_t>(i)] != 0 || tokens[i][b] == formats::kSepId ||
          tokens[i][b] == formats::kClsId;
    };
    for (int64_t half = 0; half < 2; ++half) {
      const int64_t from = half == 0 ? 0 : reuse;
      const int64_t to = half == 0 ? reuse : len;
      std::vector<int64_t> ranks;
      for (int64_t i = from; i < to; ++i) {
        for (int64_t j = 0; j < len; ++j) {
          const bool other_half = half == 0 ? j >= reuse : j < reuse;
          if (other_half) {
            // The reuse half sees nothing of the second; the second sees all of the first.
            EXPECT_EQ(perm[i][j][b], half == 0);
          } else if (!hidden(j)) {
            EXPECT_FALSE(perm[i][j][b]) << "ordinary " << j << " hidden from " << i;
          } else if (!hidden(i)) {
            EXPECT_TRUE(perm[i][j][b]) << "ordinary " << i << " sees " << j;
          }
        }
        if (hidden(i)) {
          // A target never sees itself; a functional token does.
          EXPECT_EQ(perm[i][i][b], target[static_cast<size_t>(i)] != 0);
          int64_t seen = 0;
          for (int64_t j = from; j < to; ++j) {
            seen += j != i && hidden(j) && !perm[i][j][b] ? 1 : 0;
          }
          ranks.push_back(seen);
        }
      }
      // Hidden positions see those before them in one total order: their counts of seen
      // hidden positions are 0, 1, 2, ...
      std::sort(ranks.begin(), ranks.end());
      for (size_t r = 0; r < ranks.size(); ++r) {
        EXPECT_EQ(ranks[r], static_cast<int64_t>(r)) << "half " << half;
      }
      // Whole words: in reading order, a run of targets starts a word and stops at a word
      // start or at the end of the half; words never run across <sep> or <cls>. A half where
      // no word fits its budget (a text without spaces) predicts single pieces instead.
      const bool reverse = o.bi_data && b >= o.batch_size / 2;
      const auto at = [&](int64_t k) { // k-th position of the half in reading order
        return reverse ? to - 1 - k : from + k;
      };
      const int64_t n = to - from;
      const auto word_start = [&](int64_t k) {
        const int64_t before = k > 0 ? tokens[at(k - 1)][b] : -1;
        return starts[static_cast<size_t>(tokens[at(k)][b])] || before == formats::kSepId ||
            before == formats::kClsId;
      };
      const int64_t goal = half == 0 ? p - p / 2 : p / 2;
      bool fits = false;
      for (int64_t k = 0, begin = 0; k <= n; ++k) {
        if (k == n || (k > 0 && word_start(k))) {
          fits = fits || (word_start(begin) && k - begin <= goal);
          begin = k;
        }
      }
      for (int64_t k = 0; k < n && fits; ++k) {
        const bool in = target[static_cast<size_t>(at(k))] != 0;
        const bool before = k > 0 && target[static_cast<size_t>(at(k - 1))] != 0;
        if (in && !before) {
          EXPECT_TRUE(word_start(k)) << "span starts inside a word at " << at(k);
        }
        if (!in && before) {
          EXPECT_TRUE(word_start(k)) << "span stops inside a word at " << at(k);
        }
      }
    }
  }
}

TEST(PermutationRecords, EveryRecordKeepsTheRules) {
  struct Shape {
    int64_t batch, len, reuse, perm, predict;
    bool bi;
  };
  const std::vector<Shape> shapes = {
      {4, 32, 16, 8, 10, true},
      {3, 24, 8, 4, 6, false},
      {2, 20, 10, 5, 5, true},
      {2, 16, 8, 8, 11, false}};
  int64_t records = 0;
  for (const auto& shape : shapes) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const auto data = synthetic(600, seed);
      sources::PermutationOptions o;
      o.batch_size = shape.batch;
      o.seq_len = shape.len;
      o.reuse_len = shape.reuse;
      o.perm_size = shape.perm;
      o.num_predict = shape.predict;
      o.bi_data = shape.bi;
      o.seed = seed;
      sources::PermutationRecords source(data.tokens, data.starts, o);
      for (int pass = 0; pass < 2; ++pass) {
        while (auto batch = source.next()) {
          check_batch(*batch, o, data.starts);
          records += o.batch_size;
          if (HasFatalFailure() || HasFailure()) {
            return;
          }
        }
      }
    }
  }
  EXPECT_GT(records, 500);
}

// A text without spaces is one word a line, longer than a half's budget: where no whole word
// fits, the half predicts single pieces (the original's fallback), so no row predicts nothing.
TEST(PermutationRecords, ATextWithoutSpacesStillPredicts) {
  auto data = synthetic(600, 5);
  for (int64_t id = 9; id < kVocab; ++id) {
    data.starts[static_cast<size_t>(id)] = false; // no piece starts a word
  }
  auto o = four_rows();
  sources::PermutationRecords source(data.tokens, data.starts, o);
  int64_t batches = 0;
  while (auto batch = source.next()) {
    check_batch(*batch, o, data.starts);
    const auto per_row = batch->target_mask.sum(0);
    EXPECT_GT(per_row.min().item<int64_t>(), 0) << "batch " << batches;
    ++batches;
  }
  EXPECT_GT(batches, 2);
}

TEST(PermutationRecords, RealKoreanTextKeepsTheRulesAndFillsTheBudget) {
  // NSMC's first reviews as a raw corpus, with a small SentencePiece model.
  test::TempDir dir;
  test::write_file(dir / "raw.txt", test::nsmc_documents(0, 2000, "\n\n"));
  prep::SentencePieceOptions spo;
  spo.vocab_size = 1500;
  spo.character_coverage = 0.99;
  prep::train_sentencepiece({dir / "raw.txt"}, dir / "m.model", spo);
  const formats::SentencePiece sp(dir / "m.model");
  const auto tokens = formats::encode_raw_text(dir / "raw.txt", sp);
  sources::PermutationOptions o;
  o.batch_size = 4;
  o.seq_len = 64;
  o.reuse_len = 32;
  o.perm_size = 32;
  o.num_predict = 12;
  sources::PermutationRecords source(tokens, sp.word_starts(), o);
  int64_t predicted = 0;
  int64_t records = 0;
  while (auto batch = source.next()) {
    check_batch(*batch, o, sp.word_starts());
    predicted += batch->n_targets;
    records += o.batch_size;
    if (HasFailure()) {
      return;
    }
  }
  // Whole words rarely leave the budget unfilled (<sep> and <cls> may take a share).
  EXPECT_GT(static_cast<double>(predicted), 0.85 * static_cast<double>(records * o.num_predict));
}

TEST(PermutationRecords, RowsAreStreamsForwardThenBackward) {
  const auto data = synthetic(400, 5);
  const auto o = four_rows();
  sources::PermutationRecords source(data.tokens, data.starts, o);
  EXPECT_TRUE(source.continues_streams());
  const int64_t row_len = 400 / 2;
  EXPECT_EQ(source.batches_per_pass(), (row_len - 24) / 12 + 1);
  for (int64_t w = 0; w < source.batches_per_pass(); ++w) {
    const auto batch = *source.next();
    EXPECT_TRUE(torch::equal(batch.reversed, torch::tensor({false, false, true, true})));
    const auto tokens = batch.tokens.accessor<int64_t, 2>();
    for (int64_t b = 0; b < 4; ++b) {
      for (int64_t i = 0; i < 12 + 1; ++i) { // the reuse part and A's first token
        const int64_t t = w * 12 + i;
        const int64_t stream = b % 2;
        const int64_t pos = b < 2 ? stream * row_len + t : stream * row_len + row_len - 1 - t;
        if (i < 12 || tokens[i][b] != formats::kSepId) {
          EXPECT_EQ(tokens[i][b], data.tokens.ids[static_cast<size_t>(pos)])
              << "window " << w << " row " << b << " position " << i;
        }
      }
    }
  }
  EXPECT_FALSE(source.next().has_value());
  EXPECT_EQ(source.epoch(), 1);
}

// Each prediction names the place in the text of the piece it predicts, forward rows and
// backward ones alike (xl-eval --per-token).
TEST(PermutationRecords, EachPredictionNamesWhereItsPieceSitsInTheText) {
  const auto data = synthetic(400, 7);
  const auto o = four_rows();
  sources::PermutationRecords source(data.tokens, data.starts, o);
  int64_t predictions = 0;
  while (auto batch = source.next()) {
    ASSERT_EQ(batch->target_index.sizes(), batch->targets.sizes());
    const auto index = batch->target_index.accessor<int64_t, 2>();
    const auto targets = batch->targets.accessor<int64_t, 2>();
    const auto mask = batch->target_mask.accessor<bool, 2>();
    for (int64_t p = 0; p < 8; ++p) {
      for (int64_t b = 0; b < 4; ++b) {
        if (!mask[p][b]) {
          EXPECT_EQ(index[p][b], -1);
          continue;
        }
        ASSERT_GE(index[p][b], 0);
        EXPECT_EQ(targets[p][b], data.tokens.ids[static_cast<size_t>(index[p][b])]);
        EXPECT_EQ(index[p][b] / 200, b % 2); // within its row's stream
        ++predictions;
      }
    }
  }
  EXPECT_GT(predictions, 100);
}

// A text too short for the options: fewer streams, then one stream of one shorter record that
// keeps the rules, down to kShortestRecord pieces.
TEST(PermutationRecords, ATextTooShortForTheOptionsIsFittedToThem) {
  sources::PermutationOptions asked;
  asked.batch_size = 8;
  asked.seq_len = 64;
  asked.reuse_len = 32;
  asked.perm_size = 32;
  asked.num_predict = 12;
  auto o = asked;
  EXPECT_EQ(fit_to_text(o, 4 * 64, "t"), ""); // 4 streams of one record each: as asked
  EXPECT_EQ(o.batch_size, 8);
  o = asked;
  EXPECT_THAT(fit_to_text(o, 130, "t"), HasSubstr("scored as 2 streams (4 rows)"));
  EXPECT_EQ(o.batch_size, 4);
  EXPECT_EQ(o.seq_len, 64);
  for (const int64_t n : {63, 40, 17, 10}) {
    SCOPED_TRACE("pieces " + std::to_string(n));
    const auto data = synthetic(n, 3);
    o = asked;
    EXPECT_THAT(fit_to_text(o, n, "t"), HasSubstr("scored as one stream (2 rows) of a record of"));
    EXPECT_EQ(o.batch_size, 2);
    EXPECT_LE(o.seq_len, n);
    EXPECT_EQ(o.reuse_len, o.seq_len / 2);
    sources::PermutationRecords source(data.tokens, data.starts, o); // keeps the rules
    const auto batch = *source.next();
    EXPECT_GT(batch.n_targets, 0);
  }
  o = asked;
  EXPECT_THAT(
      user_error([&] { fit_to_text(o, 9, "short.txt"); }),
      HasSubstr("short.txt holds 9 pieces: too few to score"));
}

TEST(PermutationRecords, MasksAreFreshEveryPass) {
  const auto data = synthetic(300, 2);
  sources::PermutationOptions o;
  o.batch_size = 2;
  o.seq_len = 32;
  o.reuse_len = 16;
  o.perm_size = 16;
  o.num_predict = 10;
  sources::PermutationRecords source(data.tokens, data.starts, o);
  const auto first = *source.next();
  while (source.next()) {
  }
  const auto again = *source.next();
  EXPECT_TRUE(torch::equal(first.tokens.narrow(0, 0, 16), again.tokens.narrow(0, 0, 16)));
  EXPECT_FALSE(torch::equal(first.target_mapping, again.target_mapping));
}

TEST(PermutationRecords, AResumedSourceReadsTheSameBatches) {
  const auto data = synthetic(140, 4); // 2 streams of 70: 4 windows
  sources::PermutationOptions o;
  o.batch_size = 4;
  o.seq_len = 24;
  o.reuse_len = 12;
  o.perm_size = 4;
  o.num_predict = 9;
  o.seed = 11;
  sources::PermutationRecords a(data.tokens, data.starts, o);
  for (int k = 0; k < 5; ++k) {
    sources::next_cycling(a); // crosses a pass boundary (batches_per_pass is 4)
  }
  sources::PermutationRecords b(data.tokens, data.starts, o);
  test::transfer(a, b);
  EXPECT_EQ(b.epoch(), a.epoch());
  for (int k = 0; k < 6; ++k) {
    expect_same(sources::next_cycling(a), sources::next_cycling(b));
  }
  o.seq_len = 36;
  sources::PermutationRecords other(data.tokens, data.starts, o);
  EXPECT_THAT(user_error([&] { test::transfer(a, other); }), HasSubstr("x 24 tokens"));
}

TEST(PermutationRecords, BadOptionsAreUserErrorsNamingThem) {
  const auto data = synthetic(400, 1);
  sources::PermutationOptions good;
  good.batch_size = 4;
  good.seq_len = 24;
  good.reuse_len = 12;
  good.perm_size = 6;
  good.num_predict = 8;
  const auto error = [&](const std::function<void(sources::PermutationOptions&)>& edit) {
    sources::PermutationOptions o = good;
    edit(o);
    return user_error([&] { sources::PermutationRecords(data.tokens, data.starts, o); });
  };
  EXPECT_THAT(
      error([](auto& o) { o.reuse_len = 0; }),
      HasSubstr("reuse_len must be positive, found 0: pretraining caches"));
  EXPECT_THAT(
      error([](auto& o) { o.num_predict = 0; }),
      HasSubstr("batch_size (4), perm_size (6) and num_predict (0) must be positive"));
  EXPECT_THAT(
      error([](auto& o) { o.seq_len = 14; }),
      HasSubstr("seq_len (14) must be at least reuse_len (12) + 3"));
  EXPECT_THAT(
      error([](auto& o) { o.perm_size = 5; }),
      HasSubstr("perm_size (5) must divide reuse_len (12) and seq_len - reuse_len (12)"));
  EXPECT_THAT(
      error([](auto& o) { o.num_predict = 20; }),
      HasSubstr("num_predict (20) is larger than a record can hold"));
  EXPECT_THAT(
      error([](auto& o) { o.batch_size = 3; }),
      HasSubstr("batch_size (3) must be even with bi_data"));
  EXPECT_THAT(
      error([](auto& o) { o.mask_alpha = 0; }),
      HasSubstr("mask_alpha (0) must be at least mask_beta (1)"));
  EXPECT_THAT(
      error([](auto& o) { o.seq_len = 240; }),
      HasSubstr("synthetic holds 400 tokens: too few for one window of seq_len 240"));
}

} // namespace
} // namespace xl::sources
