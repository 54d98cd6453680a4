// What a language model's loss reads against: the guess of a model that knows only how often
// each entry of the vocabulary occurs in the training split, and the characters each entry
// spells, so that runs with different vocabularies compare per character.
#pragma once

#include <torch/torch.h>

#include "xl/formats/sentence_tokens.h"
#include "xl/sources/batch.h"

namespace xl::sources {

struct UnigramBaseline {
  /// [V] float64: -log q(v), q the training split's counts with add-one smoothing,
  /// q(v) = (c_v + 1) / (N + V), so that an entry the training split never shows still scores
  torch::Tensor nll;
  /// [V] float64: characters each entry spells (SentencePiece's U+2581 counts as the space it
  /// stands for; a control piece or <unk> as one)
  torch::Tensor chars;

  /// From the training split's counts [V] (integers) and the entries' characters [V].
  static UnigramBaseline from_counts(const torch::Tensor& counts, const torch::Tensor& chars);
};

/// The baseline of SentencePiece data: the counts of the training split `train`, and the
/// characters of each piece of `model`.
UnigramBaseline piece_unigram_baseline(
    const formats::SentenceTokens& train,
    const formats::SentencePiece& model);

/// Sums over the counted targets of the batches added (the target mask's true entries, or every
/// target without a mask): the baseline's NLL and the characters of the targets.
struct BaselineTotals {
  double unigram_nll = 0.0;
  double chars = 0.0;
  int64_t targets = 0;

  void add(const Batch& batch, const UnigramBaseline& baseline);
};

} // namespace xl::sources
