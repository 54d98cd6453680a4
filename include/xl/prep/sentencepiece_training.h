// Training XLNet's SentencePiece model: a unigram model with XLNet's special pieces at their
// fixed ids (zihangdai/xlnet's sp10m.cased.v3 recipe), read by formats/sentencepiece.h.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace xl::prep {

struct SentencePieceOptions {
  int64_t vocab_size = 32000;
  double character_coverage = 0.99995;
  /// Seeds the trainer's generator (it samples and shuffles input sentences).
  uint32_t seed = 0;
  /// a line that the training goes on (elapsed time) at least this often, in seconds
  double progress_seconds = 30.0;
};

/// Trains a unigram model on the non-blank lines of `files` (normalised first) and writes it
/// atomically to `model`. One trainer thread and a fixed seed: the same input gives the same
/// model, byte for byte. Too small a corpus for `vocab_size` is a UserError.
void train_sentencepiece(
    const std::vector<std::filesystem::path>& files,
    const std::filesystem::path& model,
    const SentencePieceOptions& options);

} // namespace xl::prep
