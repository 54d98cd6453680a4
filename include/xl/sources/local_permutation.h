// XLNet's permutation of one record: _local_perm on each half (zihangdai/xlnet data_utils.py)
// and the record's mask composed from its two halves.
#pragma once

#include <cstdint>
#include <vector>

namespace xl::sources {

/// _local_perm on one half: inputs [n], which positions are masked, and the factorisation order
/// `order` (a permutation of 0..perm_size-1, applied in every block of perm_size positions).
struct LocalPermutation {
  /// [n * n] row-major, 1: position i may not see position j.
  std::vector<uint8_t> cannot_see;
  /// [n]: masked and neither <sep> nor <cls>.
  std::vector<uint8_t> is_target;
};
LocalPermutation local_perm(
    const std::vector<int64_t>& inputs,
    const std::vector<uint8_t>& is_masked,
    const std::vector<int64_t>& order);

/// What position i of a record of `len` (the reuse half of `reuse` positions, then the rest)
/// may not see, [len * len] row-major: each half's own mask, and the reuse half never sees the
/// second half.
std::vector<uint8_t> compose_halves(
    const LocalPermutation& first,
    const LocalPermutation& second,
    int64_t reuse,
    int64_t len);

} // namespace xl::sources
