// xl as a library: a trained run opened from a C++ program, to score text with the long memory,
// generate from a prompt, classify texts, and encode or decode with the run's own tokenizer.
// This header is the stable API (docs/library.md): it needs only the standard library, and
// find_package(xl) gives the target xl::xl that links it.
//
//   const auto model = xl::open_run("runs/wt2_small");
//   const xl::Score score = model.score("the film was released in the united states .\n");
//   std::cout << score.metric << " " << score.perplexity << "\n";
//
// Every error is an xl::Error (xl/util/error.h, a std::runtime_error) whose what() is one line:
// an xl::UserError for what the caller can change (a missing run, an option out of range, a
// text the run cannot read), an xl::InternalError for a fault inside xl. Nothing is printed
// unless set_log_level asks, and opening a run changes nothing else in the program (its torch
// random state, its thread count, spdlog's default logger) unless RunOptions asks.
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

enum class LogLevel { kOff, kError, kWarn, kInfo, kDebug };

/// What the library logs on stderr, through a logger of its own: kOff (the default) up to
/// kDebug; kInfo shows the progress lines the commands show. Any thread, any time.
void set_log_level(LogLevel level);

enum class Device {
  /// the run's train.device: CUDA where there is a GPU (as the commands choose), else the CPU
  kRunConfig,
  kCpu,
  kCuda,
};

/// How a run is opened.
struct RunOptions {
  /// "best", "last", another checkpoint of the run ("step_300", "averaged") or a file
  std::string checkpoint = "best";
  /// overrides of the run's config, as "key=value" ("eval.mem_len=1600", "eval.tgt_len=64"): the
  /// evaluation and generation settings, or data.dir for an older run's data at another place
  std::vector<std::string> overrides;
  /// refuse a model larger than the memory left
  bool check_memory = true;
  /// where the model runs; kCuda with device_index for one GPU of several
  Device device = Device::kRunConfig;
  int device_index = 0;
  /// LibTorch's threads for the whole process, set when the run opens (unset: left as they are)
  std::optional<int> threads;
  /// LibTorch's random generator seeded when the run opens (unset: left as it is)
  std::optional<uint64_t> seed;
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
  /// where it stands in the text, for a word or byte model: its first byte, and the bytes it
  /// stems from (the word as written where `token` is <unk>, "\n" for <eos>); -1 and "" for a
  /// SentencePiece model's pieces
  int64_t offset = -1;
  std::string text;
};

/// What a score's number is.
enum class Unit {
  /// per word or piece: Score::perplexity
  kPerplexity,
  /// per byte: Score::bits_per_character
  kBitsPerCharacter,
  /// a classifier's examples: Score::loss alone, per example
  kExampleLoss,
};

/// A text scored by a run.
struct Score {
  Unit unit = Unit::kPerplexity;
  /// what the number is, as the commands name it: "ppl", "bpc", "bpc@stride=16" (a vanilla
  /// evaluation scoring 16 positions per window), "loss"
  std::string metric;
  /// the mean negative log-likelihood per token (per example for a classifier), in nats
  double loss = 0.0;
  /// exp(loss), for word and piece data
  double perplexity = 0.0;
  /// loss / ln 2, for byte data
  double bits_per_character = 0.0;
  /// the sum of log p over the scored tokens (-loss * tokens)
  double log_likelihood = 0.0;
  /// tokens scored (examples for a classifier)
  int64_t tokens = 0;
  /// the words, bytes or pieces of the text, and those the vocabulary lacks (read as <unk>, or
  /// left out where it has none)
  int64_t units = 0;
  int64_t unknown = 0;
  /// the contiguous streams the text was read in (1: the whole text with the long memory)
  int64_t streams = 1;
  /// for a word model whose vocabulary has <unk>: the perplexity over the targets that are no
  /// <unk> (`perplexity` counts <unk> as one word, which flatters a text of rare words), and
  /// their number (0: no such score)
  double in_vocabulary_perplexity = 0.0;
  int64_t in_vocabulary_tokens = 0;
  /// with ScoreOptions::per_token: every token, in the text's order
  std::vector<TokenScore> per_token;
};

struct ScoreOptions {
  /// also list each token's log-probability (Score::per_token; language models)
  bool per_token = false;
  /// the contiguous streams a text is cut into, each read with the memory from its own start:
  /// 1 reads the whole text with the run's long memory; more is faster on a long text and
  /// scores each stream's first token as context only
  int64_t streams = 1;
  /// XLNet: the permutation LM's sampled estimate (num_predict targets per record, as its
  /// pretraining evaluates) instead of every piece left to right, each from the ones before it
  bool permutation = false;
  /// the text is tokenized already (WikiText's own files): split at blanks, not by the rules for
  /// raw text a word run records
  bool pretokenized = false;
};

/// Receives the text of each generated token as it is drawn; returns false to stop there.
using TextCallback = std::function<bool(const std::string& piece)>;

/// How text is generated (the same seed gives the same tokens).
struct GenerateOptions {
  /// tokens to generate, >= 1
  int64_t tokens = 200;
  /// divides the log-probabilities; 0: always the most probable token; else 1e-6 to 1e6
  double temperature = 1.0;
  /// draw from the k most probable tokens only (0: all)
  int64_t top_k = 0;
  /// draw from the fewest most probable tokens whose probability reaches p, in (0, 1]
  double top_p = 1.0;
  uint64_t seed = 0;
  /// false: re-read the last `window` tokens for every new token instead of the memory or the
  /// decoding cache
  bool use_memory = true;
  /// the tokens re-read without memory (unset: the memory's length, or train.tgt_len)
  std::optional<int64_t> window;
  /// the prompt is tokenized already: split at blanks, not by the rules for raw text a word
  /// run records (ScoreOptions::pretokenized)
  bool pretokenized = false;
};

/// What generate() drew: the ids and their text.
struct Generated {
  std::vector<int64_t> ids;
  /// the generated text alone (the prompt not included)
  std::string text;
  /// the callback stopped it before GenerateOptions::tokens
  bool stopped = false;
};

/// One text classified.
struct Classified {
  /// the most probable class
  int64_t label = 0;
  /// its name, where the run's config names the classes (model.xlnet.labels), else ""
  std::string name;
  /// every class's probability (they sum to 1)
  std::vector<double> probabilities;
};

/// A checkpoint of a trained run, opened on a device. The weights are loaded once and never
/// change: every method is const and may be called from any number of threads at once, each
/// call with its own memory and caches, giving what it gives alone (docs/library.md lists what
/// each method shares). Copies share the same model; a moved-from Model is empty, and a call on
/// it is a UserError.
class Model {
 public:
  /// The run at `run_dir` (the folder xl-train wrote), checkpoint options.checkpoint. The run
  /// needs no data folder: it keeps its tokenizer (an older run reads data.dir's).
  static Model open(const std::string& run_dir, const RunOptions& options = {});

  /// The family ("transformer_xl", "xlnet", "char_transformer"), the checkpoint's file and
  /// training step, the vocabulary's size and whether the run is a classifier.
  std::string family() const;
  std::string checkpoint() const;
  int64_t step() const;
  int64_t vocab_size() const;
  bool is_classifier() const;

  /// Scores `text` (UTF-8 words, bytes or raw text, as the run's data) with the long memory of
  /// the run's eval section, in memory (no file is written); a classifier's labelled examples
  /// ("label<TAB>text" lines) by their loss.
  Score score(const std::string& text, const ScoreOptions& options = {}) const;
  /// score() of a file of any size, read in bounded memory (per_token excepted).
  Score score_file(const std::string& path, const ScoreOptions& options = {}) const;
  /// Each text scored on its own (the memory from its own start, every token but the first, as
  /// score() scores it with one stream), in order: texts of similar lengths side by side in
  /// batches of the run's eval.batch_size. A text of fewer than 2 tokens scores nothing
  /// (tokens 0). Language models; no per-token lists.
  std::vector<Score> score_batch(const std::vector<std::string>& texts) const;

  /// Continues `prompt` (an empty one starts a new line); `on_text` receives each token's text
  /// as it is drawn and may stop the generation. Causal language models only (not XLNet).
  Generated generate(
      const std::string& prompt,
      const GenerateOptions& options = {},
      const TextCallback& on_text = {}) const;

  /// A classifier's class probabilities for each text, in order (batches of the run's
  /// eval.batch_size).
  std::vector<Classified> classify(const std::vector<std::string>& texts) const;

  /// The ids of `text` under the run's vocabulary (a raw text split by the rules it records)
  /// or SentencePiece model, and the text of ids.
  std::vector<int64_t> encode(const std::string& text) const;
  std::string decode(const std::vector<int64_t>& ids) const;

 private:
  struct State;
  explicit Model(std::shared_ptr<const State> state);
  const State& state() const;
  std::shared_ptr<const State> state_;
};

/// Model::open.
Model open_run(const std::string& run_dir, const RunOptions& options = {});

} // namespace xl
