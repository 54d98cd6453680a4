// xl-sample: text generated from a checkpoint of a causal language model run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xl/config/schema.h"
#include "xl/eval/generate.h"
#include "xl/formats/vocab.h"

namespace xl::app {

struct SampleRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run or a file
  std::string checkpoint = "best";
  /// the text to continue (empty: a new line)
  std::string prompt;
  /// read the prompt from this file instead
  std::optional<std::string> prompt_file;
  /// tokens to generate per sample
  int64_t tokens = 200;
  /// samples drawn side by side (batch rows)
  int64_t samples = 1;
  /// 0 (the most probable token) or from 1e-6 to 1e6
  double temperature = 1.0;
  int64_t top_k = 0;
  /// in (0, 1]
  double top_p = 1.0;
  /// >= 0
  int64_t seed = 0;
  /// re-read the last `window` tokens for every new token instead of carrying the memory
  bool no_memory = false;
  /// tokens re-read per new token without memory (unset: the memory's length, or train.tgt_len)
  std::optional<int64_t> window;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Refuses, before anything is loaded, a request the run cannot serve (a family that does not
/// generate, a temperature or top-p out of range).
void check_sample_request(const config::Config& config, const SampleRequest& request);

/// The generation a request asks for: the prompt's ids and the options.
struct SamplePlan {
  std::vector<int64_t> ids;
  eval::GenerateOptions options;
};

/// Plans the continuation of `text` (words outside the vocabulary as <unk>, with a warning;
/// an empty text is a new line) by `model`, as the run's eval section and the request say: what
/// xl-sample and the library's Model::generate draw from.
SamplePlan plan_sampling(
    const config::Config& config,
    const SampleRequest& request,
    const formats::Vocab& vocab,
    const std::string& text,
    models::LanguageModelImpl& model,
    const torch::Device& device);

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

/// Generates text from a checkpoint of a causal language model run (eval/generate.h): the prompt
/// and the samples on stdout, the speed on stderr. Returns the process exit status.
int run_sample(const config::Config& config, const SampleRequest& request);

} // namespace xl::app
