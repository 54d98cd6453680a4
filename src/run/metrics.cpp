#include "xl/run/metrics.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "xl/util/error.h"

namespace xl::run {

MetricsWriter::MetricsWriter(const std::filesystem::path& path)
    : path_(path),
      fd_(::open(
          path.c_str(),
          O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
          0644)) {
  if (fd_ < 0) {
    throw UserError(
        "cannot open metrics file for writing: " + path.string() + ": " +
        std::strerror(errno));
  }
}

MetricsWriter::~MetricsWriter() {
  ::close(fd_);
}

void MetricsWriter::write(const nlohmann::json& record) {
  const std::string line = record.dump() + '\n';
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  const ssize_t written = ::write(fd_, line.data(), line.size());
  if (written == static_cast<ssize_t>(line.size())) {
    return;
  }
  std::string reason =
      written < 0 ? std::strerror(errno) : "short write (disk full?)";
  // Take the torn line back.
  if (written > 0 && (before < 0 || ::ftruncate(fd_, before) != 0)) {
    reason += "; a torn line is left at its end";
  }
  throw UserError(fmt::format(
      "cannot append to {}: {}; this record was not written: {}",
      path_.string(),
      reason,
      line.substr(0, line.size() - 1)));
}

} // namespace xl::run
