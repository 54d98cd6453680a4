// Logging: xl's logger (util/log.h) to the console (stderr) and, for runs, to <run
// dir>/train.log.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace xl::run {

/// Sets where xl's logger writes: the console from `level` on (trace, debug, info, warn,
/// error, off) and, when given, the file, which receives everything at debug and above,
/// appended.
void setup_logging(
    const std::string& level,
    const std::optional<std::filesystem::path>& file = std::nullopt);

} // namespace xl::run
