// XLNet's permutation of one record (sources::local_perm, _local_perm of zihangdai/xlnet): the
// worked example of zihangdai/xlnet issue #104, and who sees whom over random records.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "xl/formats/sentencepiece.h"
#include "xl/sources/permutation_records.h"

namespace xl::sources {
namespace {

TEST(LocalPerm, ReproducesTheWorkedExampleOfIssue104) {
  // inputs 10 20 <sep> 40 50 <sep>, 40 and 50 masked, identity order.
  const auto perm = sources::local_perm(
      {10, 20, formats::kSepId, 40, 50, formats::kSepId}, {0, 0, 0, 1, 1, 0}, {0, 1, 2, 3, 4, 5});
  const std::vector<std::string> expected = {
      "001111", "001111", "000111", "000111", "000011", "000000"};
  for (size_t i = 0; i < 6; ++i) {
    std::string row;
    for (size_t j = 0; j < 6; ++j) {
      row += perm.cannot_see[i * 6 + j] != 0 ? '1' : '0';
    }
    EXPECT_EQ(row, expected[i]) << "row " << i;
  }
  EXPECT_EQ(perm.is_target, (std::vector<uint8_t>{0, 0, 0, 1, 1, 0}));
}

TEST(LocalPerm, TargetsSeeExactlyTheHiddenPositionsBeforeThemInTheOrder) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t perm_size = 1 + static_cast<int64_t>(rng() % 6);
    const int64_t n = perm_size * (1 + static_cast<int64_t>(rng() % 4));
    std::vector<int64_t> inputs(static_cast<size_t>(n));
    std::vector<uint8_t> masked(static_cast<size_t>(n));
    for (auto& x : inputs) {
      const auto r = rng() % 10;
      x = r == 0 ? formats::kSepId : r == 1 ? formats::kClsId : static_cast<int64_t>(10 + r);
    }
    for (auto& m : masked) {
      m = rng() % 3 == 0 ? 1 : 0;
    }
    std::vector<int64_t> order(static_cast<size_t>(perm_size));
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    const auto perm = sources::local_perm(inputs, masked, order);
    const auto place = [&](int64_t k) {
      return k - k % perm_size + order[static_cast<size_t>(k % perm_size)];
    };
    for (int64_t i = 0; i < n; ++i) {
      const auto ui = static_cast<size_t>(i);
      const bool func = inputs[ui] == formats::kSepId || inputs[ui] == formats::kClsId;
      EXPECT_EQ(perm.is_target[ui] != 0, masked[ui] != 0 && !func);
      for (int64_t j = 0; j < n; ++j) {
        const auto uj = static_cast<size_t>(j);
        const bool hidden_j =
            masked[uj] != 0 || inputs[uj] == formats::kSepId || inputs[uj] == formats::kClsId;
        const bool hidden_i = masked[ui] != 0 || func;
        bool sees = true; // ordinary context: everyone sees it
        if (hidden_j) {
          // Ordinary positions see no hidden one; hidden ones see those placed before them,
          // and themselves unless they are targets.
          sees = hidden_i && (place(j) < place(i) || (i == j && perm.is_target[ui] == 0));
        }
        EXPECT_EQ(perm.cannot_see[ui * static_cast<size_t>(n) + uj] == 0, sees)
            << "trial " << trial << " i " << i << " j " << j;
      }
    }
  }
}

} // namespace
} // namespace xl::sources
