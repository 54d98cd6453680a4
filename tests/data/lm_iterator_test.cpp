#include "xl/data/lm_iterator.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace xl::data {
namespace {

// Token ids equal to their position (mod vocabulary), to read positions back.
struct Counting {
  test::TempDir dir;
  std::unique_ptr<Vocab> vocab;
  std::unique_ptr<TokenFile> tokens;
  explicit Counting(int n) {
    std::string text;
    for (int i = 0; i < n - 1; ++i) {
      text += "w" + std::to_string(i) + " ";
    }
    const auto f = test::write_file(dir / "t.txt", text + "\n");
    vocab = std::make_unique<Vocab>(Vocab::build_word({f}));
    write_token_file(dir / "t.bin", vocab->encode_file(f), *vocab);
    tokens = std::make_unique<TokenFile>(dir / "t.bin", *vocab, dir / "v");
  }
  int64_t id(int position) const {
    return position == 0 ? 1 : vocab->index("w" + std::to_string(position));
  }
};

TEST(LMOrderedIterator, StreamsAreContiguousAndTargetsShiftByOne) {
  Counting c(23); // 22 words + <eos>
  LMOrderedIterator it(*c.tokens, 2, 4);
  EXPECT_EQ(it.n_step(), 11);
  EXPECT_EQ(it.segments_per_epoch(), 3); // 10 targets per stream: 4 + 4 + 2
  const auto s0 = it.next();
  ASSERT_EQ(s0.input.sizes(), (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(s0.input[0][0].item<int64_t>(), c.tokens->at(0));
  EXPECT_EQ(
      s0.input[0][1].item<int64_t>(),
      c.tokens->at(11)); // stream 1 starts at 11
  EXPECT_EQ(s0.target[3][1].item<int64_t>(), c.tokens->at(15));
  it.next();
  const auto s2 = it.next();
  EXPECT_EQ(s2.input.size(0), 2);
  EXPECT_EQ(s2.target[1][0].item<int64_t>(), c.tokens->at(10));
  EXPECT_FALSE(it.has_next());
  const auto again = it.next_cycling();
  EXPECT_EQ(it.epoch(), 1);
  EXPECT_TRUE(torch::equal(again.input, s0.input));
}

TEST(LMOrderedIterator, ExtendedContextPrecedesTheSegment) {
  Counting c(41);
  LMOrderedIterator it(*c.tokens, 1, 5, 3);
  it.next();
  const auto s1 = it.next();
  ASSERT_EQ(s1.input.size(0), 8); // 3 context + 5
  EXPECT_EQ(s1.input[0][0].item<int64_t>(), c.tokens->at(2));
  EXPECT_EQ(s1.target[0][0].item<int64_t>(), c.tokens->at(6));
}

TEST(LMOrderedIterator, SeekRestoresThePosition) {
  Counting c(41);
  LMOrderedIterator a(*c.tokens, 2, 3);
  a.next();
  a.next();
  LMOrderedIterator b(*c.tokens, 2, 3);
  b.seek(a.epoch(), a.row());
  EXPECT_TRUE(torch::equal(a.next().input, b.next().input));
}

} // namespace
} // namespace xl::data
