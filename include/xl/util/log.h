// The logger every part of xl writes to, "xl": on stderr at level info until the commands'
// run::setup_logging or the library's set_log_level says otherwise. xl never touches spdlog's
// default logger, so a program that links xl keeps its own.
#pragma once

#include <spdlog/logger.h>
#include <spdlog/sinks/dist_sink.h>

namespace xl {

spdlog::logger& logger();

/// Where logger() writes: the sinks run::setup_logging sets (a console, a run's train.log).
spdlog::sinks::dist_sink_mt& log_sinks();

} // namespace xl
