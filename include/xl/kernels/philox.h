// Philox4x32-10 (Salmon et al., SC'11) on the CPU, and the dropout noise filled from it: one
// Philox subsequence per block of elements, the blocks in parallel, so that the noise is the
// same for any number of threads (nn/dropout.h draws the seed and makes the tensor).
#pragma once

#include <array>
#include <cstdint>

namespace xl::kernels {

/// Elements drawn from one Philox subsequence (the block's index): the unit of parallel work.
inline constexpr int64_t kDropoutBlock = 4096;

/// The four words of one draw: `counter` under `key`. Exposed for its test against LibTorch's
/// own engine.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

/// out[0, n): `keep` where the element's word is below `threshold`, else 0; the words of block b
/// (kDropoutBlock elements) are the Philox counters (offset, 0, b) under the key `seed`.
void fill_dropout_noise(float* out, int64_t n, uint64_t seed, uint32_t threshold, float keep);

} // namespace xl::kernels
