#include "xl/run/metrics.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <torch/version.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>

#include "xl/run/tensorboard.h"
#include "xl/runtime/cpu_cache.h"
#include "xl/runtime/cuda.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/version.h"

namespace xl::run {

MetricsWriter::MetricsWriter(const std::filesystem::path& path, bool tensorboard)
    : path_(path), fd_(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) {
  if (fd_ < 0) {
    throw UserError(
        "cannot open metrics file for writing: " + path.string() + ": " + std::strerror(errno));
  }
  if (tensorboard) {
    events_ = std::make_unique<EventWriter>(path.parent_path());
  }
}

MetricsWriter::~MetricsWriter() {
  ::close(fd_);
}

namespace {

std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  return fmt::format("{}.{:03d}Z", text, ms);
}

// The process's arguments, space-separated, from the kernel's copy.
std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') {
    raw.pop_back();
  }
  for (auto& c : raw) {
    c = c == '\0' ? ' ' : c;
  }
  return raw;
}

} // namespace

void MetricsWriter::write(nlohmann::json record) {
  if (!record.contains("time")) {
    record["time"] = utc_now();
  }
  const std::string line = record.dump() + '\n';
  const off_t before = ::lseek(fd_, 0, SEEK_END);
  const ssize_t written = ::write(fd_, line.data(), line.size());
  if (written == static_cast<ssize_t>(line.size())) {
    if (events_) {
      write_events(*events_, record, wall_time_now());
    }
    return;
  }
  std::string reason = written < 0 ? std::strerror(errno) : "short write (disk full?)";
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

namespace {

// How LibTorch's OpenMP threads wait for work: the settings libgomp read at start-up.
std::string thread_wait() {
  std::vector<std::string> settings;
  for (const char* name : {"OMP_WAIT_POLICY", "GOMP_SPINCOUNT"}) {
    if (const char* value = std::getenv(name)) {
      settings.push_back(fmt::format("{}={}", name, value));
    }
  }
  return settings.empty() ? "libgomp default" : fmt::format("{}", fmt::join(settings, " "));
}

} // namespace

nlohmann::json start_record(const torch::Device& device, int64_t step) {
  return {
      {"event", "start"},
      {"from_step", step},
      {"command", command_line()},
      {"version", version()},
      {"libtorch", TORCH_VERSION},
      {"device",
       device.is_cuda() ? fmt::format("{} ({})", device.str(), runtime::cuda_device_name(device))
                        : std::string("cpu")},
      {"threads", torch::get_num_threads()},
      {"thread_wait", thread_wait()},
      // XL_ALLOCATOR=malloc leaves large blocks to malloc (app/cli.cpp)
      {"allocator", runtime::cpu_cache_installed() ? "xl cache" : "malloc"}};
}

int64_t last_logged_step(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return 0;
  }
  const std::string text = read_file(path, "metrics file");
  int64_t last = 0;
  for (size_t begin = 0; begin < text.size();) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    // A torn last line fails to parse and is skipped.
    const auto record =
        nlohmann::json::parse(text.begin() + begin, text.begin() + end, nullptr, false);
    begin = end + 1;
    if (record.is_object() && record.contains("step") && record["step"].is_number_integer()) {
      last = std::max(last, record["step"].get<int64_t>());
    }
  }
  return last;
}

size_t drop_torn_last_line(const std::filesystem::path& path) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(path, ec);
  if (ec || size == 0) {
    return 0;
  }
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    throw UserError("cannot open metrics file: " + path.string() + ": " + std::strerror(errno));
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
  const bool cut = keep < size && ::ftruncate(fd, static_cast<off_t>(keep)) != 0;
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
