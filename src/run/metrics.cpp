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

size_t drop_torn_last_line(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) {
    return 0;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    throw UserError(
        "cannot open metrics file: " + path.string() + ": " +
        std::strerror(errno));
  }
  // Scan back from the end in blocks for the last newline.
  constexpr size_t kBlock = 4096;
  char block[kBlock];
  size_t keep = 0;
  for (size_t end = size; end > 0 && keep == 0;) {
    const size_t begin = end > kBlock ? end - kBlock : 0;
    const ssize_t got = ::pread(fd, block, end - begin, begin);
    if (got != static_cast<ssize_t>(end - begin)) {
      ::close(fd);
      throw UserError("cannot read metrics file: " + path.string());
    }
    for (size_t i = end - begin; i > 0; --i) {
      if (block[i - 1] == '\n') {
        keep = begin + i;
        break;
      }
    }
    end = begin;
  }
  const bool cut =
      keep < size && ::ftruncate(fd, static_cast<off_t>(keep)) != 0;
  const int truncate_errno = errno;
  ::close(fd);
  if (cut) {
    throw UserError(
        "cannot drop the torn last line of " + path.string() + ": " +
        std::strerror(truncate_errno));
  }
  return size - keep;
}

} // namespace xl::run
