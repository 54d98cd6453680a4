#include "xl/run/run_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "xl/config/config.h"
#include "xl/run/checkpoint.h"
#include "xl/run/metrics.h"
#include "xl/run/outputs.h"
#include "xl/run/resume.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

namespace xl::run {

RunLock::RunLock(const std::filesystem::path& dir) {
  const auto path = dir / ".lock";
  // O_NOFOLLOW: the pid written below would go through a link into another file.
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0 && errno == ELOOP) {
    throw UserError(fmt::format(
        "{} is a link: a run's lock is a file of its own, never written through a link; remove "
        "the link (rm {}) and start again",
        path.string(),
        path.string()));
  }
  if (fd_ < 0) {
    throw UserError(fmt::format("cannot open {}: {}", path.string(), std::strerror(errno)));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const std::string holder = read_file(path, "lock file");
    ::close(fd_);
    throw UserError(fmt::format(
        "run directory {} is in use by another xl-train (pid {}); wait for it to finish or "
        "stop it, or choose another run.name or run.dir",
        dir.string(),
        holder.empty() ? "unknown" : holder));
  }
  const std::string pid = std::to_string(::getpid());
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    // The lock holds without it; a second trainer's message just lacks the pid.
    logger().warn("could not note the pid in {}", path.string());
  }
}

RunLock::~RunLock() {
  ::close(fd_); // releases the lock
}

std::filesystem::path RunPaths::last_checkpoint() const {
  return checkpoints / "last.pt";
}

std::filesystem::path RunPaths::best_checkpoint() const {
  return checkpoints / "best.pt";
}

std::filesystem::path RunPaths::snapshot(int64_t step) const {
  return checkpoints / fmt::format("step_{}.pt", step);
}

std::vector<std::filesystem::path> RunPaths::snapshots() const {
  std::vector<std::pair<int64_t, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints, ec)) {
    const auto step = snapshot_step(entry.path().stem().string());
    if (entry.path().extension() == ".pt" && step) {
      found.emplace_back(*step, entry.path());
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::filesystem::path> out;
  for (auto& item : found) {
    out.push_back(std::move(item.second));
  }
  return out;
}

namespace {

// What `path` is when it is there but no regular file (a folder, a link to nothing, a pipe, a
// device), or an empty string.
std::string not_a_file(const std::filesystem::path& path) {
  std::error_code ec;
  const auto link = std::filesystem::symlink_status(path, ec);
  if (!std::filesystem::exists(link)) {
    return "";
  }
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) {
    return "a link to " + std::filesystem::read_symlink(path, ec).string() + ", which is missing";
  }
  if (std::filesystem::is_regular_file(status)) {
    return "";
  }
  if (std::filesystem::is_directory(status)) {
    return "a folder";
  }
  return std::filesystem::is_fifo(status) ? "a named pipe" : "a device or socket";
}

} // namespace

std::filesystem::path RunPaths::checkpoint(const std::string& name) const {
  if (std::filesystem::is_regular_file(name)) {
    return name;
  }
  const auto path = checkpoints / (name + ".pt");
  if (std::filesystem::is_regular_file(path)) {
    return path;
  }
  // A bare name ("best") is the run's; a folder of that name where xl runs is not meant.
  const bool a_path =
      name.find('/') != std::string::npos || !std::filesystem::path(name).extension().empty();
  for (const auto& candidate : {path, std::filesystem::path(a_path ? name : "")}) {
    if (const auto what = candidate.empty() ? "" : not_a_file(candidate); !what.empty()) {
      throw UserError(fmt::format(
          "checkpoint '{}': {} is {}, not a checkpoint file; give a checkpoint's name or file",
          name,
          candidate.string(),
          what));
    }
  }
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(checkpoints, ec)) {
    if (entry.path().extension() == ".pt") {
      names.push_back(entry.path().stem().string());
    }
  }
  std::sort(names.begin(), names.end());
  throw UserError(fmt::format(
      "checkpoint '{}' not found: neither a file nor {}; {} holds: {}",
      name,
      path.string(),
      checkpoints.string(),
      names.empty() ? std::string("no checkpoints") : fmt::format("{}", fmt::join(names, ", "))));
}

std::optional<int64_t> snapshot_step(const std::string& name) {
  const std::string digits = name.rfind("step_", 0) == 0 ? name.substr(5) : "";
  if (digits.empty() || digits.size() >= 19 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(digits);
}

bool written_by_trainer(const std::string& name) {
  return name == "best" || name == "last" || snapshot_step(name).has_value();
}

std::filesystem::path directory_of(const config::Config& config) {
  return config.run.dir ? std::filesystem::path(*config.run.dir)
                        : std::filesystem::path("runs") / config.run.name;
}

RunPaths paths_of(const std::filesystem::path& dir) {
  return RunPaths{
      dir,
      dir / "config.yaml",
      dir / "train.log",
      dir / "metrics.jsonl",
      dir / "checkpoints",
      nullptr};
}

void require_run_folder(const std::string& what, const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw UserError(fmt::format(
        "{} {}: {}; name a run directory (the folder holding config.yaml and checkpoints/)",
        what,
        dir.string(),
        std::filesystem::exists(dir, ec) ? "a file, not a folder" : "no such folder"));
  }
}

void check_config_belongs(const std::filesystem::path& config_file, const config::Config& config) {
  const auto folder =
      config_file.has_parent_path() ? config_file.parent_path() : std::filesystem::path(".");
  const auto run = enclosing_run(folder);
  const auto dir = directory_of(config);
  // --set run.dir=NEW names the folder on purpose: a new run with that run's settings.
  const auto source = config.sources.find("run.dir");
  const bool chosen = source != config.sources.end() && source->second.file.rfind("--set", 0) == 0;
  if (chosen || !run || config_file.filename() != "config.yaml" ||
      std::filesystem::weakly_canonical(std::filesystem::absolute(folder)) != *run ||
      std::filesystem::weakly_canonical(std::filesystem::absolute(dir)) == *run) {
    return;
  }
  throw UserError(fmt::format(
      "{} is the config of the run in {}, but its run.dir is {} (a copied run?): pass "
      "--set run.dir={} to train this copy, or use {}/config.yaml for the other run",
      config_file.string(),
      folder.string(),
      dir.string(),
      folder.string(),
      dir.string()));
}

namespace {

// A run writes config.yaml, train.log and metrics.jsonl: only into a folder that is new,
// empty, or a run's (its .lock tells; one killed before its first checkpoint starts again).
void refuse_foreign_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec) || std::filesystem::is_empty(dir, ec) ||
      std::filesystem::exists(dir / ".lock", ec)) {
    return;
  }
  std::vector<std::string> held;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    held.push_back(entry.path().filename().string());
  }
  std::sort(held.begin(), held.end());
  if (held.size() > 3) {
    held.resize(3);
    held.emplace_back("...");
  }
  throw UserError(fmt::format(
      "run directory {} holds files that are not a run's ({}); a run writes its "
      "config.yaml, logs and checkpoints there: choose another run.name or run.dir",
      dir.string(),
      fmt::join(held, ", ")));
}

// A new run inside another run's folder (or its checkpoints/) would be counted as that run's
// files, and written over by it: refused, as the other tools refuse outputs inside a run.
void refuse_inside_another_run(const std::filesystem::path& dir) {
  const auto parent = std::filesystem::absolute(dir).lexically_normal().parent_path();
  if (const auto run = enclosing_run(parent)) {
    throw UserError(fmt::format(
        "run directory {} is inside the run in {}; a run's folder holds its own files only: "
        "choose a run.dir outside it",
        dir.string(),
        run->string()));
  }
}

// Every checkpoint of `paths` (last, best, snapshots, averages: the .pt files of checkpoints/),
// relative to the run folder, sorted.
std::vector<std::string> held_checkpoints(const RunPaths& paths) {
  std::vector<std::string> held;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(paths.checkpoints, ec)) {
    if (entry.path().extension() == ".pt") {
      held.push_back(std::filesystem::relative(entry.path(), paths.dir, ec).string());
    }
  }
  std::sort(held.begin(), held.end());
  return held;
}

// Any checkpoint, not only last.pt: a best.pt left without one (an import, or last.pt removed)
// would be replaced by a new run's.
void refuse_held_checkpoints(const RunPaths& paths, const ResumableCheck& resumable) {
  if (const auto held = held_checkpoints(paths); !held.empty()) {
    std::vector<std::string> passed_over;
    throw UserError(fmt::format(
        "run directory {} already holds checkpoints ({}); {}choose another run.name or run.dir",
        paths.dir.string(),
        fmt::join(held, ", "),
        find_resume_point(paths, resumable, passed_over)
            ? "pass --resume (or --auto-resume) to continue that run, or "
            : ""));
  }
}

} // namespace

void check_new_directory(const config::Config& config, const ResumableCheck& resumable) {
  const RunPaths paths = paths_of(directory_of(config));
  refuse_inside_another_run(paths.dir);
  refuse_foreign_folder(paths.dir);
  refuse_held_checkpoints(paths, resumable);
}

RunPaths prepare_directory(
    const config::Config& config,
    bool resume,
    const ResumableCheck& resumable) {
  RunPaths paths = paths_of(directory_of(config));
  std::error_code ec;
  if (resume && !holds_checkpoints(paths)) {
    throw UserError(
        "--resume: no checkpoint to resume from in " + paths.dir.string() + " (expected " +
        paths.last_checkpoint().string() + ")");
  }
  if (!resume) {
    refuse_inside_another_run(paths.dir);
    refuse_foreign_folder(paths.dir);
  }
  std::filesystem::create_directories(paths.dir, ec);
  if (ec) {
    throw UserError("cannot create run directory " + paths.dir.string() + ": " + ec.message());
  }
  paths.lock = std::make_shared<const RunLock>(paths.dir);
  if (!resume) { // checked again under the lock: another process may have written since
    refuse_held_checkpoints(paths, resumable);
  }
  std::filesystem::create_directories(paths.checkpoints, ec);
  if (ec) {
    throw UserError("cannot create run directory " + paths.dir.string() + ": " + ec.message());
  }
  // What a save killed half-way left; nobody else writes here while the lock is held.
  for (const auto& file : {paths.last_checkpoint(), paths.best_checkpoint()}) {
    remove_stale_temporaries(file);
  }
  if (resume) {
    restore_last_checkpoint(paths, resumable);
  }
  // A kill before the first checkpoint leaves a run that starts again without --resume.
  if (const size_t dropped = drop_torn_last_line(paths.metrics)) {
    logger().warn(
        "{}: dropped a torn last record ({} bytes) that an interrupted write left",
        paths.metrics.string(),
        dropped);
  }
  if (!resume) { // a resumed run's config is written once its checkpoint accepted it
    atomic_write(paths.config, config::dump(config));
  }
  return paths;
}

} // namespace xl::run
