// xl-import: a run directory around weights in Hugging Face's names.
#pragma once

#include <optional>
#include <string>

#include "xl/config/schema.h"

namespace xl::app {

struct ImportRequest {
  /// safetensors with Hugging Face TransfoXLLMHeadModel names
  std::string weights;
  /// the file orders adaptive-softmax clusters like kimiyoung's PyTorch code
  bool reverse_clusters = false;
  /// Hugging Face's tokenizer files (a save_pretrained folder, or its vocab.txt or
  /// spiece.model) instead of the vocabulary of config.data
  std::optional<std::string> tokenizer;
  /// refuse a config whose memory estimate exceeds the available memory
  bool enforce_memory = true;
};

/// Creates a run directory (config.yaml and checkpoints/best.pt) from imported weights, so that
/// xl-eval evaluates them like a trained run. The vocabulary of config.data (or request.tokenizer)
/// must be the model's; the run keeps it, and opens without data.dir.
/// Returns the process exit status.
int run_import(const config::Config& config, const ImportRequest& request);

} // namespace xl::app
