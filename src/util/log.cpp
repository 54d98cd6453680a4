#include "xl/util/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace xl {

namespace {

struct Logger {
  std::shared_ptr<spdlog::sinks::dist_sink_mt> sinks;
  std::shared_ptr<spdlog::logger> logger;
};

const Logger& instance() {
  static const Logger made = [] {
    Logger l;
    l.sinks = std::make_shared<spdlog::sinks::dist_sink_mt>();
    auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    console->set_pattern("[%H:%M:%S] %^%l%$ %v");
    l.sinks->add_sink(console);
    l.logger = std::make_shared<spdlog::logger>("xl", l.sinks);
    l.logger->set_level(spdlog::level::info);
    return l;
  }();
  return made;
}

} // namespace

spdlog::logger& logger() {
  return *instance().logger;
}

spdlog::sinks::dist_sink_mt& log_sinks() {
  return *instance().sinks;
}

} // namespace xl
