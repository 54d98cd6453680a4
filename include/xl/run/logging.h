// Logging: spdlog to the console (stderr) and, for runs, to <run
// dir>/train.log.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace xl::run {

/// Installs the default logger. `level` is one of trace, debug, info, warn,
/// error; the file, when given, receives everything at debug and above,
/// appended.
void setup_logging(
    const std::string& level,
    const std::optional<std::filesystem::path>& file = std::nullopt);

} // namespace xl::run
