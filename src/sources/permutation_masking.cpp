// XLNet's span masking (zihangdai/xlnet data_utils.py: _sample_mask): which positions of a
// record's half are predicted, whole words and spans of words, drawn from the source's stream.
#include <algorithm>
#include <array>
#include <numeric>

#include "xl/sources/permutation_records.h"

namespace xl::sources {

namespace {

constexpr int64_t kMaxGram = 5;

} // namespace

// One half of a record in reading order: which positions start a word. Words never run across
// <sep> or <cls>: what follows them starts a word.
class PermutationRecords::Words {
 public:
  Words(const std::vector<int64_t>& tokens, const std::vector<bool>& word_starts, bool reverse)
      : starts_(tokens.size()) {
    bool after_functional = false;
    for (size_t r = 0; r < tokens.size(); ++r) {
      const int64_t token = tokens[reverse ? tokens.size() - 1 - r : r];
      starts_[r] = word_starts[static_cast<size_t>(token)] || after_functional;
      after_functional = token == formats::kSepId || token == formats::kClsId;
    }
  }
  int64_t size() const {
    return static_cast<int64_t>(starts_.size());
  }
  bool start(int64_t k) const {
    return starts_[static_cast<size_t>(k)] != 0;
  }
  // The end of the word that starts at k: the next word start, or the end.
  int64_t end_of(int64_t k) const {
    int64_t end = k + 1;
    while (end < size() && !start(end)) {
      ++end;
    }
    return end;
  }

 private:
  std::vector<uint8_t> starts_;
};

std::vector<uint8_t> PermutationRecords::sample_mask(
    const std::vector<int64_t>& tokens,
    int64_t goal,
    bool reverse) {
  // In reading order: backward rows are flipped here and their mask flipped back at the end.
  const Words words(tokens, word_starts_, reverse);
  std::vector<uint8_t> mask(tokens.size());
  const int64_t num = mask_spans(words, goal, mask);
  if (mask_whole_words(words, goal, num, mask) == 0) {
    // No word fits the budget (a text without spaces: a line is one word): the original's
    // fallback, single pieces, so that the half predicts something.
    mask_single_pieces(words, goal, mask);
  }
  if (reverse) {
    std::reverse(mask.begin(), mask.end());
  }
  return mask;
}

// Spans of n words (p(n) ~ 1/n over n = 1..5), each with n * mask_alpha / mask_beta positions
// of context around it, left to right; returns how many positions they cover.
int64_t PermutationRecords::mask_spans(
    const Words& words,
    int64_t goal,
    std::vector<uint8_t>& mask) {
  const int64_t n = words.size();
  std::array<double, kMaxGram> cumulative{};
  double total = 0;
  for (int64_t g = 1; g <= kMaxGram; ++g) {
    total += 1.0 / static_cast<double>(g);
    cumulative[static_cast<size_t>(g - 1)] = total;
  }
  int64_t num = 0;
  int64_t cur = 0;
  while (cur < n && num < goal) {
    const double u = uniform() * total;
    int64_t count = 1;
    while (count < kMaxGram && u >= cumulative[static_cast<size_t>(count - 1)]) {
      ++count;
    }
    count = std::min(count, goal - num);
    const int64_t ctx = count * options_.mask_alpha / options_.mask_beta;
    const int64_t l_ctx = draw(ctx);
    int64_t begin = cur + l_ctx;
    while (begin < n && !words.start(begin)) {
      ++begin;
    }
    if (begin >= n) {
      break;
    }
    int64_t end = begin;
    for (int64_t w = 0; w < count && end < n; ++w) {
      end = words.end_of(end);
    }
    if (end >= n) {
      break; // a span touching the end is dropped, as in the original
    }
    // Drop the last words while the span exceeds the budget.
    int64_t fit = end;
    while (fit > begin && fit - begin > goal - num) {
      do {
        --fit;
      } while (fit > begin && !words.start(fit));
    }
    std::fill(mask.begin() + begin, mask.begin() + fit, 1);
    num += fit - begin;
    cur = end + (ctx - l_ctx);
  }
  return num;
}

// Fills the budget (`num` of `goal` covered) with random whole words that fit; returns the
// positions covered.
int64_t PermutationRecords::mask_whole_words(
    const Words& words,
    int64_t goal,
    int64_t num,
    std::vector<uint8_t>& mask) {
  while (num < goal) {
    std::vector<std::pair<int64_t, int64_t>> fitting;
    for (int64_t k = 0; k < words.size(); ++k) {
      if (words.start(k) && mask[static_cast<size_t>(k)] == 0) {
        const int64_t end = words.end_of(k);
        if (end - k <= goal - num) {
          fitting.emplace_back(k, end);
        }
      }
    }
    if (fitting.empty()) {
      break;
    }
    const auto [begin, end] =
        fitting[static_cast<size_t>(draw(static_cast<int64_t>(fitting.size())))];
    std::fill(mask.begin() + begin, mask.begin() + end, 1);
    num += end - begin;
  }
  return num;
}

// `goal` random positions (all of them where there are fewer), one piece each.
void PermutationRecords::mask_single_pieces(
    const Words& words,
    int64_t goal,
    std::vector<uint8_t>& mask) {
  std::vector<int64_t> free(static_cast<size_t>(words.size()));
  std::iota(free.begin(), free.end(), 0);
  for (int64_t num = 0; num < goal && !free.empty(); ++num) {
    const auto k = static_cast<size_t>(draw(static_cast<int64_t>(free.size())));
    mask[static_cast<size_t>(free[k])] = 1;
    free.erase(free.begin() + static_cast<std::ptrdiff_t>(k));
  }
}

} // namespace xl::sources
