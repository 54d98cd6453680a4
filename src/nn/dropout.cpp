#include "xl/nn/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <mutex>

#include "xl/util/vector_clones.h"

namespace xl::nn {

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

// The next seed from the default CPU generator: one draw, under its lock.
uint64_t next_seed() {
  auto generator = at::detail::getDefaultCPUGenerator();
  const std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get<at::CPUGeneratorImpl>()->random64();
}

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

#undef XL_VECTOR_CLONES

// The noise in float32 (converted for other dtypes).
void fill_noise(float* out, int64_t n, uint64_t seed, uint32_t threshold, float keep) {
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

} // namespace

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

torch::Tensor dropout_noise(const torch::Tensor& like, double p) {
  TORCH_CHECK(like.device().is_cpu(), "dropout_noise draws on the CPU; got ", like.device());
  TORCH_CHECK(p >= 0.0 && p <= 1.0, "dropout probability must be in [0, 1], got ", p);
  auto noise = at::empty(like.sizes(), like.options().memory_format(at::MemoryFormat::Contiguous));
  const int64_t n = noise.numel();
  if (n == 0) {
    return noise;
  }
  const uint64_t seed = next_seed();
  const double keep = 1.0 - p;
  if (keep == 1.0) {
    return noise.fill_(1.0);
  }
  // An element is kept when its word is below keep * 2^32, rounded down.
  const auto threshold = static_cast<uint32_t>(std::floor(keep * 4294967296.0));
  const auto scale = static_cast<float>(keep > 0.0 ? 1.0 / keep : 0.0);
  if (noise.scalar_type() == torch::kFloat) {
    fill_noise(noise.data_ptr<float>(), n, seed, threshold, scale);
    return noise;
  }
  auto f = at::empty({n}, like.options().dtype(torch::kFloat));
  fill_noise(f.data_ptr<float>(), n, seed, threshold, scale);
  return noise.copy_(f.view(noise.sizes()));
}

torch::Tensor dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p == 0.0) {
    return x;
  }
  if (!x.device().is_cpu()) {
    return torch::dropout(x, p, true);
  }
  return x * dropout_noise(x, p);
}

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : options(options_) {
  reset();
}

void DropoutImpl::reset() {
  TORCH_CHECK(
      options.p() >= 0.0 && options.p() <= 1.0,
      "dropout probability must be in [0, 1], got ",
      options.p());
}

void DropoutImpl::pretty_print(std::ostream& stream) const {
  stream << "Dropout(p=" << options.p() << ")";
}

torch::Tensor DropoutImpl::forward(const torch::Tensor& x) {
  return nn::dropout(x, options.p(), is_training());
}

} // namespace xl::nn
