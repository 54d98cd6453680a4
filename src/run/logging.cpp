#include "xl/run/logging.h"

#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include "xl/util/error.h"
#include "xl/util/log.h"

namespace xl::run {

void setup_logging(const std::string& level, const std::optional<std::filesystem::path>& file) {
  auto console = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  console->set_level(spdlog::level::from_str(level));
  console->set_pattern("[%H:%M:%S] %^%l%$ %v");
  std::vector<spdlog::sink_ptr> sinks{console};
  if (file) {
    std::error_code ec;
    if (std::filesystem::exists(*file, ec) && !std::filesystem::is_regular_file(*file, ec)) {
      throw UserError(fmt::format(
          "log file {} is not a file (a folder?); a run appends its log there: move it away",
          file->string()));
    }
    std::shared_ptr<spdlog::sinks::basic_file_sink_mt> file_sink;
    try {
      file_sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(file->string());
    } catch (const spdlog::spdlog_ex& e) {
      throw UserError(fmt::format("cannot write log file {}: {}", file->string(), e.what()));
    }
    file_sink->set_level(spdlog::level::debug);
    file_sink->set_pattern("[%Y-%m-%d %H:%M:%S.%e] %l %v");
    sinks.push_back(file_sink);
  }
  log_sinks().set_sinks(sinks);
  logger().set_level(spdlog::level::debug);
  logger().flush_on(spdlog::level::info);
}

} // namespace xl::run
