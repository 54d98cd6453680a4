// Text generation with a trained run of a causal language model: the prompt encoded with the
// run's vocabulary, the generation's settings from its eval section, and the text of the drawn
// ids as they come. What xl-sample and the library's Model::generate run; threads may generate
// with one TrainedRun at once, each with its own memory and decoding cache.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "xl/config/schema.h"
#include "xl/eval/generate.h"
#include "xl/formats/vocab.h"
#include "xl/infer/trained_run.h"

namespace xl::infer {

/// What to generate.
struct SampleRequest {
  /// the text to continue (empty: a new line), and what messages call it
  std::string prompt;
  std::string prompt_name = "the prompt";
  /// the prompt is tokenized already: split at blanks, not by the vocabulary's rules for raw
  /// text (formats::Vocab::tokenization)
  bool pretokenized = false;
  /// tokens to generate per sample, >= 1
  int64_t tokens = 200;
  /// samples drawn side by side (batch rows)
  int64_t samples = 1;
  /// temperature 0 (the most probable token) or from 1e-6 to 1e6; top_k >= 0; top_p in (0, 1]
  eval::SamplingOptions sampling;
  uint64_t seed = 0;
  /// false: re-read the last `window` tokens for every new token instead of the memory
  bool use_memory = true;
  /// tokens re-read per new token without memory (unset: the memory's length, or
  /// train.tgt_len)
  std::optional<int64_t> window;
};

/// How the caller names the request's settings in messages: the command's flags or the
/// library's options.
struct SampleNames {
  const char* generator;
  const char* tokens;
  const char* temperature;
  const char* top_k;
  const char* top_p;
  const char* window;
};
inline constexpr SampleNames
    kSampleFlags{"xl-sample", "--tokens", "--temperature", "--top-k", "--top-p", "--window"};

/// Refuses, before anything is loaded, a request the run cannot serve: a family that does not
/// generate, settings out of range.
void check_sample_request(
    const config::Config& config,
    const SampleRequest& request,
    const SampleNames& names = kSampleFlags);

/// The generation a request asks for: the prompt's ids and the options.
struct SamplePlan {
  std::vector<int64_t> ids;
  eval::GenerateOptions options;
};

/// Plans the continuation of request.prompt (words outside the vocabulary as <unk>, with a
/// warning; an empty prompt is a new line) as the run's eval section and the request say.
SamplePlan plan_sampling(
    const TrainedRun& run,
    const SampleRequest& request,
    const SampleNames& names = kSampleFlags);

/// Generates what `plan` asks for, request.samples rows side by side; `on_tokens` receives
/// each step's ids [B] as they are drawn.
eval::Generated generate(
    const TrainedRun& run,
    const SamplePlan& plan,
    int64_t samples,
    const std::function<void(const torch::Tensor&)>& on_tokens = {});

/// The text of generated ids as they come, spaced as the vocabulary decodes a continuation of
/// the prompt whose last id it is given.
class TextStream {
 public:
  TextStream(const formats::Vocab& vocab, int64_t last_prompt_id);
  /// The text of the next id.
  std::string next(int64_t id);
  /// The text of all the ids at once, from where the stream is.
  std::string whole(const std::vector<int64_t>& ids) const;

 private:
  bool is_word(int64_t id) const;

  const formats::Vocab& vocab_;
  bool after_word_;
};

} // namespace xl::infer
