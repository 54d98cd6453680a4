// xl-import: a run directory around weights in Hugging Face's names.
#pragma once

#include <string>

#include "xl/config/schema.h"

namespace xl::app {

struct ImportRequest {
  /// safetensors with Hugging Face TransfoXLLMHeadModel names
  std::string weights;
  /// the file orders adaptive-softmax clusters like kimiyoung's PyTorch code
  bool reverse_clusters = false;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Creates a run directory (config.yaml and checkpoints/best.pt) from imported weights, so that
/// xl-eval evaluates them like a trained run. The vocabulary of config.data must be the model's.
/// Returns the process exit status.
int run_import(const config::Config& config, const ImportRequest& request);

} // namespace xl::app
