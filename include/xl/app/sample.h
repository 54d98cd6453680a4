// xl-sample: text generated from a checkpoint of a causal language model run.
#pragma once

#include <optional>
#include <string>

#include "xl/config/schema.h"
#include "xl/infer/sampler.h"

namespace xl::app {

struct SampleRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run or a file
  std::string checkpoint = "best";
  /// what to generate (infer/sampler.h)
  infer::SampleRequest sample;
  /// read the prompt from this file instead
  std::optional<std::string> prompt_file;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Generates text from a checkpoint of a causal language model run (eval/generate.h): the prompt
/// and the samples on stdout, the speed on stderr. Returns the process exit status.
int run_sample(const config::Config& config, SampleRequest request);

} // namespace xl::app
