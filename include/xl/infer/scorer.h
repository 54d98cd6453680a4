// Scoring with a trained run: a user's text (held in memory, or a file of any size read in
// bounded memory) or one of the run's splits, with the long memory of the run's eval section.
// What xl-eval and the library's Model::score run; any number of threads may score with one
// TrainedRun at once, each call with its own memory and caches.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "xl/eval/evaluator.h"
#include "xl/eval/per_token.h"
#include "xl/infer/trained_run.h"
#include "xl/sources/dataset.h"

namespace xl::infer {

struct ScoreOptions {
  /// how a user's text is cut and, for XLNet, factorised (sources::TextScoring)
  sources::TextScoring scoring;
  /// keep each token's score (Scored::listing): in memory, or in scratch space beside
  /// per_token_file, which is written when the scoring is done
  bool list_tokens = false;
  std::optional<std::filesystem::path> per_token_file;
  /// stop after this many batches (unset: the whole text or split)
  std::optional<int64_t> max_batches;
  /// asked between batches: true stops the scoring there (a command's signal)
  std::function<bool()> stop;
  /// sees each batch before it is scored
  std::function<void(const sources::Batch&)> observe;
  /// a progress line at least this often while scoring, in seconds (0: none)
  double progress_seconds = 0.0;
};

/// The targets of a user's text that the vocabulary has (no <unk>), and their summed -log p.
struct InVocabulary {
  int64_t tokens = 0;
  double nll = 0.0;
};

/// A scoring done.
struct Scored {
  /// the totals of every loss term
  eval::EvalResult result;
  /// the setting in words and as values (metrics.jsonl's "eval")
  std::string setting;
  nlohmann::json values;
  /// for a user's text: what was read of it
  std::optional<sources::TextReading> reading;
  /// for a user's text read with a word vocabulary that has <unk>: its other targets
  std::optional<InVocabulary> in_vocabulary;
  /// each token's score, when asked for
  std::shared_ptr<eval::PerTokenListing> listing;
  /// the tokens the listing reads
  std::shared_ptr<const formats::Tokens> tokens;
  /// the batches continued their streams (a memory carried from one to the next)
  bool continued = false;
};

/// Scores a user's text as the run's data would read it (sources::Dataset::text_batches).
Scored score_text(
    const TrainedRun& run,
    const sources::UserText& text,
    const ScoreOptions& options = {});

/// Scores the run's split `split` ("valid", "test") as its eval section says, with the unigram
/// guess beside the model where the data has one. Reads data.dir; one caller at a time.
Scored score_split(const TrainedRun& run, const std::string& split, const ScoreOptions& options);

} // namespace xl::infer
