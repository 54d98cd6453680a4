// The CPU dropout's noise: Philox4x32-10 as LibTorch's own engine computes it, laid out as the
// header says, drawn from the default CPU generator (manual_seed and a saved state reproduce
// it), the same for any number of threads, with the right rate and scale; the module's
// training and evaluation behaviour and its gradient.
#include "xl/nn/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/PhiloxRNGEngine.h>
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "xl/kernels/philox.h"

namespace xl::nn {
namespace {

using kernels::kDropoutBlock;
using kernels::philox4x32;

// The seed the next dropout call takes: the default CPU generator's next 64-bit draw.
uint64_t peek_seed() {
  auto generator = at::detail::getDefaultCPUGenerator();
  const std::lock_guard<std::mutex> lock(generator.mutex());
  auto copy = generator.clone();
  return copy.get<at::CPUGeneratorImpl>()->random64();
}

TEST(Dropout, PhiloxIsLibTorchsEngine) {
  for (const uint64_t seed : {0ULL, 42ULL, 0x0123456789ABCDEFULL}) {
    for (const uint64_t subsequence : {0ULL, 7ULL, (1ULL << 33) + 5}) {
      for (const uint64_t offset : {0ULL, 1ULL, 1000ULL, (1ULL << 32) + 3}) {
        at::philox_engine engine(seed, subsequence, offset);
        const auto words = philox4x32(
            {static_cast<uint32_t>(offset),
             static_cast<uint32_t>(offset >> 32),
             static_cast<uint32_t>(subsequence),
             static_cast<uint32_t>(subsequence >> 32)},
            {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
        for (const uint32_t word : words) {
          EXPECT_EQ(word, engine())
              << "seed " << seed << " subsequence " << subsequence << " offset " << offset;
        }
      }
    }
  }
}

TEST(Dropout, NoiseIsEachBlocksPhiloxWordsAgainstTheKeepThreshold) {
  torch::manual_seed(11);
  const uint64_t seed = peek_seed();
  const double p = 0.3;
  const int64_t n = 3 * kDropoutBlock + 100; // a partial block, and a partial group in it
  const auto noise = dropout_noise(torch::empty({n}), p);
  const auto* values = noise.data_ptr<float>();
  const auto threshold = static_cast<uint32_t>(std::floor((1.0 - p) * 4294967296.0));
  const auto kept = static_cast<float>(1.0 / (1.0 - p));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t block = i / kDropoutBlock;
    const int64_t in_block = i % kDropoutBlock;
    const int64_t group = in_block / 64;
    const int64_t word = in_block % 64 / 16;
    const int64_t lane = in_block % 16;
    const bool partial = block == n / kDropoutBlock && group == (n % kDropoutBlock) / 64;
    // A partial group reads its words in order, lane-major.
    const int64_t w = partial ? (in_block % 64) / 16 : word;
    const int64_t l = partial ? (in_block % 64) % 16 : lane;
    const auto counter = static_cast<uint64_t>(group * 16 + l);
    const auto words = philox4x32(
        {static_cast<uint32_t>(counter),
         static_cast<uint32_t>(counter >> 32),
         static_cast<uint32_t>(block),
         0},
        {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
    const float expected = words[static_cast<size_t>(w)] < threshold ? kept : 0.0F;
    ASSERT_EQ(values[i], expected) << "element " << i;
  }
}

TEST(Dropout, KeepsOneMinusPOfTheElementsAtTheRightScale) {
  torch::manual_seed(3);
  const int64_t n = 1 << 20;
  for (const double p : {0.1, 0.5, 0.9}) {
    const auto noise = dropout_noise(torch::empty({n}), p);
    const double kept = noise.ne(0).to(torch::kDouble).mean().item<double>();
    const double sigma = std::sqrt(p * (1 - p) / static_cast<double>(n));
    EXPECT_NEAR(kept, 1 - p, 5 * sigma) << "p " << p;
    EXPECT_NEAR(noise.max().item<double>(), 1 / (1 - p), 1e-6);
    // Two draws agree on an element as often as independent ones would.
    const auto other = dropout_noise(torch::empty({n}), p);
    const double same = noise.ne(0).eq(other.ne(0)).to(torch::kDouble).mean().item<double>();
    const double expected = p * p + (1 - p) * (1 - p);
    EXPECT_NEAR(same, expected, 5 * std::sqrt(expected * (1 - expected) / n)) << "p " << p;
  }
  EXPECT_TRUE(dropout_noise(torch::empty({100}), 0.0).eq(1).all().item<bool>());
  EXPECT_TRUE(dropout_noise(torch::empty({100}), 1.0).eq(0).all().item<bool>());
  EXPECT_EQ(dropout_noise(torch::empty({0, 3}), 0.5).numel(), 0);
  const auto bf16 = dropout_noise(torch::empty({2, 5000}, torch::kBFloat16), 0.25);
  EXPECT_EQ(bf16.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(bf16.sizes(), (std::vector<int64_t>{2, 5000}));
}

TEST(Dropout, FollowsTheCpuGeneratorForAnyNumberOfThreads) {
  const int threads = torch::get_num_threads();
  const auto draw = [](int n_threads) {
    torch::set_num_threads(n_threads);
    torch::manual_seed(5);
    auto first = dropout_noise(torch::empty({5 * kDropoutBlock}), 0.2);
    auto second = dropout_noise(torch::empty({5 * kDropoutBlock}), 0.2);
    return std::make_pair(first, second);
  };
  const auto [one_a, one_b] = draw(1);
  const auto [two_a, two_b] = draw(2);
  torch::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one_a, two_a));
  EXPECT_TRUE(torch::equal(one_b, two_b));
  EXPECT_FALSE(torch::equal(one_a, one_b));
  // A saved generator state draws the same noise again.
  auto generator = at::detail::getDefaultCPUGenerator();
  const auto state = generator.get_state();
  const auto a = dropout_noise(torch::empty({1000}), 0.5);
  generator.set_state(state);
  EXPECT_TRUE(torch::equal(a, dropout_noise(torch::empty({1000}), 0.5)));
}

TEST(Dropout, ScalesInTrainingPassesThroughOtherwiseAndCarriesTheGradient) {
  torch::manual_seed(8);
  Dropout drop(0.4);
  const auto x = torch::randn({7, 300}, torch::requires_grad());
  torch::manual_seed(2);
  const auto y = drop(x);
  torch::manual_seed(2);
  const auto noise = dropout_noise(x, 0.4);
  EXPECT_TRUE(torch::allclose(y, x * noise));
  y.sum().backward();
  EXPECT_TRUE(torch::equal(x.grad(), noise));
  drop->eval();
  EXPECT_TRUE(torch::equal(drop(x), x));
  drop->train();
  EXPECT_TRUE(torch::equal(Dropout(0.0)(x), x));
  EXPECT_THROW(Dropout(1.5), c10::Error);
}

} // namespace
} // namespace xl::nn
