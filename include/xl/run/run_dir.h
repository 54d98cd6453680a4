// A run directory: the resolved config.yaml, train.log, metrics.jsonl and
// checkpoints/.
#pragma once

#include <torch/serialize.h>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "xl/config/schema.h"

namespace xl::run {

/// An exclusive lock on a run directory (flock on <dir>/.lock, which holds the pid): one
/// writer per run. The kernel releases it when the process ends, however it ends.
class RunLock {
 public:
  /// Takes the lock, or throws a UserError naming the process that holds it.
  explicit RunLock(const std::filesystem::path& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
};

struct RunPaths {
  std::filesystem::path dir;
  std::filesystem::path config;      // config.yaml (fully resolved)
  std::filesystem::path log;         // train.log
  std::filesystem::path metrics;     // metrics.jsonl
  std::filesystem::path checkpoints; // checkpoints/
  /// held by a run being trained (prepare_directory); null for readers
  std::shared_ptr<const RunLock> lock;
  std::filesystem::path last_checkpoint() const;
  std::filesystem::path best_checkpoint() const;
  /// checkpoints/step_<step>.pt, a snapshot kept by train.keep_snapshots
  std::filesystem::path snapshot(int64_t step) const;
  /// The snapshots in the directory, oldest step first.
  std::vector<std::filesystem::path> snapshots() const;
  /// A checkpoint by name: "best", "last", another file of checkpoints/ without ".pt"
  /// ("step_300", "averaged"), or a path; a UserError listing the run's checkpoints otherwise.
  std::filesystem::path checkpoint(const std::string& name) const;
};

/// The step of a snapshot's name ("step_300" -> 300), or nothing for another name.
std::optional<int64_t> snapshot_step(const std::string& name);

/// Whether the trainer writes checkpoints/<name>.pt: best, last and the snapshots step_<S>.
bool written_by_trainer(const std::string& name);

/// The directory of a run: run.dir, or runs/<run.name>.
std::filesystem::path directory_of(const config::Config& config);

/// Paths inside the run directory `dir`.
RunPaths paths_of(const std::filesystem::path& dir);

/// Refuses a config file that is a run's config.yaml (a run directory's, also a copied one's)
/// whose run.dir names another run directory: training it would continue the other run.
void check_config_belongs(const std::filesystem::path& config_file, const config::Config& config);

/// Refuses (UserError starting with `what`, "--run" or "open_run") a `dir` that is no folder.
void require_run_folder(const std::string& what, const std::filesystem::path& dir);

/// Whether an opened checkpoint holds what a resume needs, not weights alone (the trainer's
/// train::holds_training_state).
using ResumableCheck = std::function<bool(torch::serialize::InputArchive&)>;

/// Refuses, before any work, a new run's directory that prepare_directory would refuse: one
/// inside another run, holding checkpoints or files that are not a run's (the message suggests
/// --resume where a checkpoint that `resumable` accepts is there). Creates nothing.
void check_new_directory(const config::Config& config, const ResumableCheck& resumable);

/// Creates (or, with `resume`, reopens) the run directory, locks it (a second trainer of the
/// same run is refused), removes the temporary files a killed save left, and writes the
/// resolved config into it atomically (not when resuming: the trainer writes it once the
/// checkpoint accepted the config, so a refused resume changes nothing). Starting a new run
/// where checkpoints already exist is refused, so that a finished run is never overwritten by
/// accident, as is one in a folder holding other files. A resume continues from the newest
/// checkpoint it can (restore_last_checkpoint, with `resumable`), and is refused when there is
/// none.
RunPaths prepare_directory(
    const config::Config& config,
    bool resume,
    const ResumableCheck& resumable = nullptr);

} // namespace xl::run
