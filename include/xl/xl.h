// xl as a library: a trained run opened from a C++ program, to score text with the long memory,
// generate from a prompt, classify texts, and encode or decode with the run's own vocabulary.
// This header is the stable API (docs/library.md): it needs only the standard library, and
// find_package(xl) gives the target xl::xl that links it.
//
//   auto model = xl::open_run("runs/wt2_small");
//   const xl::Score score = model.score_file("my.txt");
//   std::cout << score.perplexity << "\n";
//
// Every error is an xl::UserError (xl/util/error.h, a std::runtime_error) whose what() is the
// one line the commands print after "error: ". Nothing is printed unless set_log_level asks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xl/util/error.h"

namespace xl {

/// "x.y.z", the project's version, and the `git describe` of the build (as `--version` prints).
std::string library_version();

/// What the library logs on stderr: "off" (the default), "error", "warn", "info" (the commands'
/// progress lines), "debug". A UserError for another name.
void set_log_level(const std::string& level);

/// How a run is opened.
struct RunOptions {
  /// "best", "last", another checkpoint of the run ("step_300", "averaged") or a file
  std::string checkpoint = "best";
  /// overrides of the run's config, as --set takes them ("eval.mem_len=1600",
  /// "train.device=cpu"): the evaluation and generation settings, or data.dir for the run's
  /// data at another place
  std::vector<std::string> overrides;
  /// refuse a model larger than the memory left (the commands' --skip-memory-check is false)
  bool check_memory = true;
};

/// One token of a scored text.
struct TokenScore {
  /// its place among the text's tokens, from 0
  int64_t index = 0;
  /// the word, byte or piece
  std::string token;
  /// log p of it (natural log) given everything before it; NaN for a token nothing predicts
  /// (the text's first), which Score::tokens does not count
  double log_prob = 0.0;
};

/// A text scored by a language model, as `xl-eval --file` scores it.
struct Score {
  /// "ppl" (words, pieces) or "bpc" (bytes)
  std::string unit;
  /// the mean negative log-likelihood per token, in nats
  double loss = 0.0;
  /// exp(loss), for word and piece data
  double perplexity = 0.0;
  /// loss / ln 2, for byte data
  double bits_per_character = 0.0;
  /// the sum of log p over the scored tokens (-loss * tokens)
  double log_likelihood = 0.0;
  /// tokens scored
  int64_t tokens = 0;
  /// the words (or bytes) of the text, and those the vocabulary lacks (read as <unk>, or left
  /// out where it has none)
  int64_t units = 0;
  int64_t unknown = 0;
  /// with ScoreOptions::per_token: every token, in the text's order
  std::vector<TokenScore> per_token;
};

struct ScoreOptions {
  /// also list each token's log-probability (Score::per_token)
  bool per_token = false;
};

/// How text is generated, as `xl-sample` does it (the same seed gives the same tokens).
struct GenerateOptions {
  /// tokens to generate
  int64_t tokens = 200;
  /// divides the log-probabilities; 0: always the most probable token; else 1e-6 to 1e6
  double temperature = 1.0;
  /// draw from the k most probable tokens only (0: all)
  int64_t top_k = 0;
  /// draw from the fewest most probable tokens whose probability reaches p (1: all)
  double top_p = 1.0;
  uint64_t seed = 0;
  /// false: re-read the last `window` tokens for every new token instead of the memory or the
  /// decoding cache
  bool use_memory = true;
  /// the tokens re-read without memory (unset: the memory's length, or train.tgt_len)
  std::optional<int64_t> window;
};

/// What generate() drew: the ids and their text.
struct Generated {
  std::vector<int64_t> ids;
  /// the generated text alone (the prompt not included)
  std::string text;
};

/// One text classified.
struct Classified {
  /// the most probable class
  int64_t label = 0;
  /// every class's probability (they sum to 1)
  std::vector<double> probabilities;
};

/// A checkpoint of a trained run, on the device its config names. Its methods may be called
/// from one thread at a time (a model holds its evaluation state): use one Model per thread.
/// A Model is cheap to move; copies share the same model.
class Model {
 public:
  /// The run at `run_dir` (the folder xl-train wrote), checkpoint options.checkpoint.
  static Model open(const std::string& run_dir, const RunOptions& options = {});

  /// The family ("transformer_xl", "xlnet", "char_transformer"), the checkpoint's file and
  /// training step, the vocabulary's size and whether the run is a classifier.
  std::string family() const;
  std::string checkpoint() const;
  int64_t step() const;
  int64_t vocab_size() const;
  bool is_classifier() const;

  /// Scores `text` (UTF-8 words, or bytes, as the run's data) with the long memory of the
  /// run's eval section; a classifier's examples are scored as `xl-eval --file` does (its loss).
  Score score(const std::string& text, const ScoreOptions& options = {}) const;
  /// score() of a file of any size, read in bounded memory (per_token excepted).
  Score score_file(const std::string& path, const ScoreOptions& options = {}) const;

  /// Continues `prompt` (an empty one starts a new line); `on_text` receives each token's text
  /// as it is drawn. Causal language models only (not XLNet).
  Generated generate(
      const std::string& prompt,
      const GenerateOptions& options = {},
      const std::function<void(const std::string& piece)>& on_text = {}) const;

  /// A classifier's class probabilities for each text, in order (batches of the run's
  /// eval.batch_size).
  std::vector<Classified> classify(const std::vector<std::string>& texts) const;

  /// The ids of `text` under the run's vocabulary or SentencePiece model, and the text of ids.
  std::vector<int64_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int64_t>& ids) const;

 private:
  struct State;
  explicit Model(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

/// Model::open.
Model open_run(const std::string& run_dir, const RunOptions& options = {});

} // namespace xl
