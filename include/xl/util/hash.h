// The checksums of xl's own files: a fast 64-bit hash of data (token files, checkpoints' data,
// SentencePiece models), its streamed form, and FNV-1a for vocabularies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xl {

/// 64-bit FNV-1a hash, used for vocabulary checksums (stable across platforms
/// and versions).
uint64_t fnv1a64(const void* data, size_t size, uint64_t seed = 0xcbf29ce484222325ULL);

/// A fast 64-bit hash of a byte block, for data checksums (several GB/s: four independent
/// multiply-rotate lanes over 8-byte words, then a final mix). Chain blocks through `seed`.
/// Stable across platforms of the same endianness; not cryptographic.
uint64_t hash64(const void* data, size_t size, uint64_t seed = 0);

/// hash64 over a stream fed in pieces of any size: blocks of 1 MiB chained through the seed,
/// so the digest depends on the bytes only.
class StreamHash {
 public:
  void update(const void* data, size_t size);
  uint64_t digest();

 private:
  std::string block_;
  uint64_t hash_ = 0;
};

} // namespace xl
