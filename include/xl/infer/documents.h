// Many documents scored with a trained run, each on its own (its memory from its own start, as
// score_text scores it alone): a group of documents of similar lengths side by side in each batch
// where the run's evaluation allows it (sources::Dataset::document_batches), several groups at
// once by several sessions (threads) sharing the run. What xl-eval --documents and the library's
// Model::score_batch run.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "xl/formats/vocab.h"
#include "xl/infer/trained_run.h"

namespace xl::infer {

struct DocumentOptions {
  /// documents side by side in a batch (the run's eval.batch_size)
  int64_t batch = 10;
  /// groups scored at once, each by a session of its own
  int64_t sessions = 1;
  /// the texts are tokenized already (formats::TextOptions)
  bool pretokenized = false;
  /// asked between groups: true stops the scoring (the results so far are incomplete)
  std::function<bool()> stop;
};

/// One document scored.
struct DocumentScore {
  /// targets scored: all tokens but the first (0: fewer than 2 tokens, nothing to score)
  int64_t tokens = 0;
  /// the sum of -log p over them, in nats
  double nll = 0.0;
  /// the words, bytes or pieces read, and those the vocabulary lacks
  formats::UnknownCount count;
  /// what qualifies the metric where the score is an estimate ("@stride=8": a vanilla
  /// evaluation scoring 8 positions per window), else ""
  std::string qualifier;

  double loss() const {
    return tokens > 0 ? nll / static_cast<double>(tokens) : 0.0;
  }
};

/// Scores each of `texts` on its own with `run` (a language model: a classifier is a UserError
/// naming `classifier_call`), results in the texts' order; nothing when options.stop stopped it.
/// Texts are grouped by length, longest first: the same texts give the same numbers, whichever
/// sessions score which group. (Another batch of texts may change a document's loss in its last
/// float bits: the products of a batch of other shapes sum in another order.)
std::optional<std::vector<DocumentScore>> score_documents(
    const TrainedRun& run,
    const std::vector<std::string>& texts,
    const DocumentOptions& options,
    const std::string& classifier_call);

} // namespace xl::infer
