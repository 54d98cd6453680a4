// The preamble of the commands that read a trained run (xl-eval, xl-sample, xl-export): the
// memory check, the model built from the config, and the checkpoint's weights once its config
// and vocabulary are found to match.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "xl/config/schema.h"
#include "xl/models/language_model.h"
#include "xl/run/run_dir.h"
#include "xl/sources/dataset.h"

namespace xl::app {

struct TrainedModel {
  models::LanguageModel model;
  std::filesystem::path checkpoint;
  int64_t step = 0;
  /// the resolved config the checkpoint holds (YAML)
  std::string saved_config;
};

/// Refuses (UserError) a config whose model or data section is not that of checkpoint
/// `checkpoint_name` of the run at `paths`.
void require_checkpoint_config(
    const config::Config& config,
    const run::RunPaths& paths,
    const std::string& checkpoint_name);

/// Checkpoint `checkpoint_name` of the run at `paths`, on `device`. A config or vocabulary other
/// than the checkpoint's, or a model larger than the memory left (unless `enforce_memory` is
/// false; `use` names what it is for in that message), is a UserError.
TrainedModel load_trained_model(
    const config::Config& config,
    const run::RunPaths& paths,
    const std::string& checkpoint_name,
    const sources::Dataset& dataset,
    const torch::Device& device,
    bool enforce_memory,
    const char* use = "evaluation");

} // namespace xl::app
