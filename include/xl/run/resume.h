// Where a resumed run continues: the newest checkpoint of its directory that verifies and holds
// a training state, found after any kill (run_dir.h prepares the directory).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "xl/run/run_dir.h"

namespace xl::run {

struct ResumePoint {
  std::filesystem::path file;
  /// the step the file holds (a snapshot's, whatever its name)
  int64_t step = 0;
};

/// The newer of last.pt and best.pt that verifies and that `resumable` accepts (any, when
/// null), else the snapshot of the highest step that does; `passed_over` gets why each one
/// tried before could not be resumed.
std::optional<ResumePoint> find_resume_point(
    const RunPaths& paths,
    const ResumableCheck& resumable,
    std::vector<std::string>& passed_over);

/// Whether the run directory holds any checkpoint a resume could start from: last.pt, best.pt
/// or a snapshot (--auto-resume then resumes, and says so when none of them can).
bool holds_checkpoints(const RunPaths& paths);

/// The checkpoint a resume of `paths` continues from: of last.pt and best.pt the one written
/// last (a kill between the two writes of a new best, or during the first checkpoint, leaves
/// best.pt the newer, or the only one), else the other, else the snapshot of the highest step
/// (the one it holds, whatever its name); the first that verifies and that `resumable` accepts
/// (any, when null). When that is not last.pt
/// it is copied to last.pt, which the trainer reads, and a warning says which and why. None is
/// a UserError naming each file and why it cannot be resumed. The caller holds the run's lock.
std::filesystem::path restore_last_checkpoint(
    const RunPaths& paths,
    const ResumableCheck& resumable);

} // namespace xl::run
