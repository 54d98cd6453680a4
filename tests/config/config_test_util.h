// What the config tests share: the test files, a config's error message, a config written to a
// test folder.
#pragma once

#include <string>
#include <vector>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/util/error.h"

namespace xl::config {

/// A file of tests/config/files/.
inline std::string files(const std::string& name) {
  return std::string(test::kSourceDir) + "/tests/config/files/" + name;
}

/// Loads a config and returns the ConfigError message ("" if it loaded).
inline std::string error_of(
    const std::string& path,
    const std::vector<std::string>& overrides = {}) {
  try {
    load(path, overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

/// `text` after a data section, as dir/config.yaml.
inline std::string write_config(const test::TempDir& dir, const std::string& text) {
  return test::write_file(dir / "config.yaml", "data:\n  dir: d\n" + text).string();
}

} // namespace xl::config
