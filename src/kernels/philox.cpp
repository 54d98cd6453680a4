#include "xl/kernels/philox.h"

#include <ATen/Parallel.h>

#include <algorithm>

#include "xl/kernels/vector_clones.h"

namespace xl::kernels {

namespace {

// Philox4x32's multipliers and Weyl key increments (Random123).
constexpr uint32_t kM0 = 0xD2511F53u;
constexpr uint32_t kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u;
constexpr uint32_t kW1 = 0xBB67AE85u;
constexpr int kRounds = 10;

// Counters drawn side by side, so that the compiler can keep the rounds in vector registers.
constexpr int64_t kLanes = 16;
constexpr int64_t kPerGroup = 4 * kLanes;
static_assert(kDropoutBlock % kPerGroup == 0, "a block holds whole groups");

// One block's noise (cloned: the rounds run eight or four lanes to an instruction where the
// machine has them): Philox counters (offset, 0, block) under the key `seed`; word j of lane l
// of group g decides element g * kPerGroup + j * kLanes + l (in a last, partial group, the
// words in that order up to n). The lanes hold 32-bit words in 64-bit integers, which the
// compiler multiplies as vectors.
XL_VECTOR_CLONES void fill_block(
    uint64_t seed,
    uint64_t block,
    uint32_t threshold,
    float keep,
    float* out,
    int64_t n) {
  constexpr uint64_t kLow = 0xFFFFFFFFu;
  for (int64_t g = 0; g < n; g += kPerGroup) {
    uint64_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
    for (int64_t l = 0; l < kLanes; ++l) {
      const auto counter = static_cast<uint64_t>(g / 4 + l);
      c0[l] = counter & kLow;
      c1[l] = counter >> 32;
      c2[l] = block & kLow;
      c3[l] = block >> 32;
    }
    uint64_t k0 = seed & kLow;
    uint64_t k1 = seed >> 32;
    for (int round = 0; round < kRounds; ++round) {
      for (int64_t l = 0; l < kLanes; ++l) {
        const uint64_t p0 = kM0 * c0[l];
        const uint64_t p1 = kM1 * c2[l];
        c0[l] = ((p1 >> 32) ^ c1[l] ^ k0) & kLow;
        c1[l] = p1 & kLow;
        c2[l] = ((p0 >> 32) ^ c3[l] ^ k1) & kLow;
        c3[l] = p0 & kLow;
      }
      k0 = (k0 + kW0) & kLow;
      k1 = (k1 + kW1) & kLow;
    }
    const uint64_t* words[4] = {c0, c1, c2, c3};
    const int64_t left = std::min(kPerGroup, n - g);
    if (left == kPerGroup) {
      for (int64_t j = 0; j < 4; ++j) {
        for (int64_t l = 0; l < kLanes; ++l) {
          out[g + j * kLanes + l] = words[j][l] < threshold ? keep : 0.0F;
        }
      }
    } else {
      for (int64_t i = 0; i < left; ++i) {
        out[g + i] = words[i / kLanes][i % kLanes] < threshold ? keep : 0.0F;
      }
    }
  }
}

} // namespace

void fill_dropout_noise(float* out, int64_t n, uint64_t seed, uint32_t threshold, float keep) {
  const int64_t blocks = (n + kDropoutBlock - 1) / kDropoutBlock;
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const int64_t start = b * kDropoutBlock;
      fill_block(
          seed,
          static_cast<uint64_t>(b),
          threshold,
          keep,
          out + start,
          std::min(kDropoutBlock, n - start));
    }
  });
}

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key) {
  for (int round = 0; round < kRounds; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(kM0) * counter[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * counter[2];
    counter = {
        static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ key[0],
        static_cast<uint32_t>(p1),
        static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ key[1],
        static_cast<uint32_t>(p0)};
    key[0] += kW0;
    key[1] += kW1;
  }
  return counter;
}

} // namespace xl::kernels
