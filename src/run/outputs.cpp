#include "xl/run/outputs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::run {

namespace {

namespace fs = std::filesystem;

// The absolute path with every symbolic link of its existing part resolved, so that a link
// into a run is judged by where it leads.
fs::path resolved(const fs::path& path) {
  std::error_code ec;
  const auto absolute = fs::absolute(path, ec);
  const auto canonical = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal() : canonical;
}

bool is_run_directory(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / "config.yaml", ec) &&
      (fs::is_directory(dir / "checkpoints", ec) || fs::exists(dir / "metrics.jsonl", ec) ||
       fs::exists(dir / ".lock", ec));
}

// The deepest part of `path` that exists, and refuses one that is not a writable folder.
void check_writable_parent(const std::string& flag, const fs::path& path) {
  std::error_code ec;
  fs::path existing = path;
  while (!existing.empty() && !fs::exists(existing, ec)) {
    existing = existing.parent_path();
  }
  if (existing.empty()) {
    existing = ".";
  }
  if (!fs::is_directory(existing, ec)) {
    throw UserError(
        fmt::format("{} {}: {} is not a folder", flag, path.string(), existing.string()));
  }
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    throw UserError(fmt::format(
        "{} {}: cannot create files in {} (permission denied)",
        flag,
        path.string(),
        existing.string()));
  }
}

void check_not_empty(const std::string& flag, const std::string& path) {
  if (path.empty()) {
    throw UserError(fmt::format("{}: expected a path, found an empty one", flag));
  }
}

} // namespace

std::optional<fs::path> enclosing_run(const fs::path& path) {
  for (fs::path dir = resolved(path); !dir.empty(); dir = dir.parent_path()) {
    if (is_run_directory(dir)) {
      return dir;
    }
    if (dir == dir.root_path()) {
      break;
    }
  }
  return std::nullopt;
}

std::string file_role(const fs::path& run, const fs::path& path) {
  const auto relative = resolved(path).lexically_relative(resolved(run));
  if (relative.empty() || *relative.begin() == "..") {
    return "";
  }
  const std::string first = relative.begin()->string();
  if (first == "checkpoints") {
    return "its checkpoints";
  }
  if (std::next(relative.begin()) != relative.end()) {
    return ""; // a file in a folder of the run other than checkpoints/
  }
  if (first == "config.yaml") {
    return "its config";
  }
  if (first == "metrics.jsonl") {
    return "its metrics";
  }
  if (first == "train.log") {
    return "its log";
  }
  if (first == ".lock") {
    return "its lock";
  }
  if (first.rfind("events.out.tfevents.", 0) == 0) {
    return "its TensorBoard events";
  }
  return "";
}

void check_plain_name(const std::string& flag, const std::string& name) {
  if (const auto problem = plain_name_problem(name); !problem.empty()) {
    throw UserError(
        fmt::format("{} '{}': expected a plain name (no folder), {}", flag, name, problem));
  }
}

namespace {

// A descriptor's link on the way from `path` (/proc/<pid>/fd/<n>, /dev/fd/<n>, or what leads to
// one, as /dev/stdout does): its process (0: this one) and descriptor; nothing else.
std::optional<std::pair<int, int>> descriptor_link(const fs::path& path) {
  std::error_code ec;
  fs::path at = fs::absolute(path, ec).lexically_normal();
  for (int hop = 0; hop < 40; ++hop) {
    const auto parent = at.parent_path();
    const auto owner = parent.parent_path();
    if (parent.filename() == "fd" && (owner == "/dev" || owner.parent_path() == "/proc")) {
      const std::string process = owner.filename().string();
      const bool ours = owner == "/dev" || process == "self" ||
          process == std::to_string(::getpid()) || process == "thread-self";
      const std::string number = at.filename().string();
      const bool digits = !number.empty() &&
          number.find_first_not_of("0123456789") == std::string::npos && number.size() < 9;
      return std::pair{ours ? 0 : -1, digits ? std::stoi(number) : -1};
    }
    if (!fs::is_symlink(fs::symlink_status(at, ec))) {
      return std::nullopt;
    }
    const auto target = fs::read_symlink(at, ec);
    if (ec) {
      return std::nullopt;
    }
    at = (target.is_absolute() ? target : at.parent_path() / target).lexically_normal();
  }
  return std::nullopt;
}

} // namespace

bool writes_through(const fs::path& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  return descriptor_link(path).has_value() || fs::is_character_file(status) || fs::is_fifo(status);
}

int open_through(const std::string& flag, const fs::path& path) {
  // One of this process's own descriptors (/dev/stdout): written through that descriptor, so
  // that what it and this write come in the order they were written; what stdio holds first.
  std::fflush(stdout);
  std::fflush(stderr);
  const auto link = descriptor_link(path);
  const int fd = link && link->first == 0 && link->second >= 0
      ? ::fcntl(link->second, F_DUPFD_CLOEXEC, 0)
      : ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) {
    throw UserError(
        fmt::format("{} {}: cannot write: {}", flag, path.string(), std::strerror(errno)));
  }
  return fd;
}

fs::path check_output_file(const std::string& flag, const std::string& path, bool force) {
  check_not_empty(flag, path);
  fs::path file(path);
  std::error_code ec;
  if (fs::is_directory(file, ec)) {
    throw UserError(fmt::format("{} {} is a folder; name a file to write", flag, path));
  }
  if (writes_through(file)) {
    return file; // a device, a pipe or a descriptor: written into, never replaced
  }
  if (fs::is_symlink(fs::symlink_status(file, ec))) {
    file = resolved(file); // the file it leads to is replaced, the link stays
  }
  if (const auto run = enclosing_run(file)) { // through links: judged by where it leads
    if (const auto role = file_role(*run, file); !role.empty()) {
      throw UserError(fmt::format(
          "{} {} is a file of the run in {} ({}); tools never write over a run's files: "
          "name another file",
          flag,
          path,
          run->string(),
          role));
    }
  }
  if (fs::exists(fs::symlink_status(file, ec))) {
    if (!fs::is_regular_file(file, ec)) {
      throw UserError(fmt::format(
          "{} {} exists and is a {}, not a file; name another file",
          flag,
          path,
          fs::is_block_file(file, ec) ? "disk" : "socket or another special file"));
    }
    if (!force) {
      throw UserError(fmt::format(
          "{} {} exists; pass --force to replace it, or name another file", flag, path));
    }
  }
  check_writable_parent(flag, file.parent_path().empty() ? "." : file.parent_path());
  return file;
}

namespace {

// The same file through any path: links, "..", or another hard link to it.
bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  return resolved(a) == resolved(b) || fs::equivalent(a, b, ec);
}

void refuse_output_over_input(
    const std::string& input_flag,
    const fs::path& input,
    const std::string& output_flag,
    const fs::path& output) {
  if (same_file(input, output)) {
    throw UserError(fmt::format(
        "{} {} is the file {} reads: an output never replaces its input (--force neither); name "
        "another file",
        output_flag,
        output.string(),
        input_flag));
  }
}

} // namespace

std::optional<fs::path> OutputFiles::add(
    const std::string& flag,
    const std::optional<std::string>& path) {
  if (!path) {
    return std::nullopt;
  }
  fs::path file = check_output_file(flag, *path, force_);
  for (const auto& [other_flag, other] : checked_) {
    if (!writes_through(file) && same_file(other, file)) {
      throw UserError(fmt::format("{} and {} name the same file: {}", other_flag, flag, *path));
    }
  }
  for (const auto& [input_flag, input] : inputs_) {
    refuse_output_over_input(input_flag, input, flag, file);
  }
  checked_.emplace_back(flag, file);
  return file;
}

void OutputFiles::add_input(const std::string& flag, const std::optional<std::string>& path) {
  if (!path) {
    return;
  }
  for (const auto& [output_flag, output] : checked_) {
    refuse_output_over_input(flag, *path, output_flag, output);
  }
  inputs_.emplace_back(flag, *path);
}

fs::path check_output_folder(const std::string& flag, const std::string& path, bool force) {
  check_not_empty(flag, path);
  const fs::path folder(path);
  std::error_code ec;
  if (const auto run = enclosing_run(folder)) {
    throw UserError(fmt::format(
        "{} {} {} the run in {}; tools never write into a run's folder: name a folder "
        "outside it",
        flag,
        path,
        resolved(folder) == *run ? "is" : "is inside",
        run->string()));
  }
  if (fs::exists(folder, ec)) {
    if (!fs::is_directory(folder, ec)) {
      throw UserError(fmt::format("{} {} is a file; name a folder to write into", flag, path));
    }
    if (!force && !fs::is_empty(folder, ec)) {
      throw UserError(fmt::format(
          "{} {} is a folder that is not empty; pass --force to write over what it holds, "
          "or name another folder",
          flag,
          path));
    }
  }
  check_writable_parent(flag, folder);
  return folder;
}

void create_output_folder(const std::string& flag, const fs::path& folder) {
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) {
    throw UserError(
        fmt::format("{}: cannot create the folder {}: {}", flag, folder.string(), ec.message()));
  }
}

void write_output(
    const std::string& flag,
    const fs::path& path,
    const std::function<void(const ByteSink&)>& produce) {
  if (!writes_through(path)) {
    if (path.has_parent_path()) {
      create_output_folder(flag, path.parent_path());
    }
    atomic_write(path, produce);
    return;
  }
  const int fd = open_through(flag, path);
  try {
    produce([&](const void* data, size_t size) {
      const auto* bytes = static_cast<const char*>(data);
      for (size_t done = 0; done < size;) {
        const ssize_t n = ::write(fd, bytes + done, size - done);
        if (n < 0 && errno == EINTR) {
          continue;
        }
        if (n <= 0) {
          throw UserError(fmt::format(
              "{} {}: cannot write: {}",
              flag,
              path.string(),
              n < 0 ? std::strerror(errno) : "nothing written"));
        }
        done += static_cast<size_t>(n);
      }
    });
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
}

void write_output_file(const std::string& flag, const fs::path& path, const std::string& content) {
  write_output(flag, path, [&](const ByteSink& sink) { sink(content.data(), content.size()); });
}

} // namespace xl::run
