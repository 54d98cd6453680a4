// Where a config value came from, for messages.
#pragma once

#include <string>

namespace xl::config {

/// "configs/a.yaml:12", or "--set model.d_model=512" for a command-line override.
struct Source {
  std::string file;
  int line = 0; // 1-based; 0 when unknown (command-line overrides)
  std::string str() const;
};

} // namespace xl::config
