// xl-sample: text generated from a checkpoint of a causal language model run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "xl/config/schema.h"

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

/// Generates text from a checkpoint of a causal language model run (eval/generate.h): the prompt
/// and the samples on stdout, the speed on stderr. Returns the process exit status.
int run_sample(const config::Config& config, const SampleRequest& request);

} // namespace xl::app
