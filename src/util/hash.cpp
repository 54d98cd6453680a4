#include "xl/util/hash.h"

#include <algorithm>
#include <cstring>

namespace xl {

namespace {

constexpr uint64_t kPrime1 = 0x9e3779b185ebca87ULL;
constexpr uint64_t kPrime2 = 0xc2b2ae3d27d4eb4fULL;

uint64_t rotate_left(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

uint64_t lane(uint64_t acc, uint64_t word) {
  return rotate_left(acc + word * kPrime2, 31) * kPrime1;
}

uint64_t load64(const unsigned char* p) {
  uint64_t w = 0;
  std::memcpy(&w, p, sizeof(w));
  return w;
}

// Spreads every input bit over the whole word (the finaliser of MurmurHash3).
uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

} // namespace

uint64_t hash64(const void* data, size_t size, uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t acc[4] = {seed + kPrime1, seed + kPrime2, seed, seed - kPrime1};
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (size_t k = 0; k < 4; ++k) {
      acc[k] = lane(acc[k], load64(p + i + 8 * k));
    }
  }
  uint64_t h = rotate_left(acc[0], 1) + rotate_left(acc[1], 7) + rotate_left(acc[2], 12) +
      rotate_left(acc[3], 18) + size;
  for (; i + 8 <= size; i += 8) {
    h = lane(h, load64(p + i));
  }
  for (; i < size; ++i) {
    h = lane(h, p[i]);
  }
  return mix(h);
}

void StreamHash::update(const void* data, size_t size) {
  constexpr size_t kBlock = 1 << 20;
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const size_t n = std::min(size, kBlock - block_.size());
    block_.append(p, n);
    p += n;
    size -= n;
    if (block_.size() == kBlock) {
      hash_ = hash64(block_.data(), block_.size(), hash_);
      block_.clear();
    }
  }
}

uint64_t StreamHash::digest() {
  if (!block_.empty()) {
    hash_ = hash64(block_.data(), block_.size(), hash_);
    block_.clear();
  }
  return hash_;
}

uint64_t fnv1a64(const void* data, size_t size, uint64_t seed) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  uint64_t hash = seed;
  for (size_t i = 0; i < size; ++i) {
    hash ^= bytes[i];
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

} // namespace xl
