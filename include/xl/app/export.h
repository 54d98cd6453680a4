// xl-export: a checkpoint of a run in Hugging Face's format.
#pragma once

#include <string>

#include "xl/config/schema.h"

namespace xl::app {

struct ExportRequest {
  std::string run_dir;
  /// "best", "last", another checkpoint of the run or a file
  std::string checkpoint = "best";
  /// the folder to write (created; outside any run)
  std::string out;
  /// write into a folder that is not empty
  bool force = false;
};

/// Writes a checkpoint of a run in Hugging Face's format (models/hf.h): out/config.json,
/// out/model.safetensors, and the run's vocabulary file. Returns the process exit status.
int run_export(const config::Config& config, const ExportRequest& request);

} // namespace xl::app
