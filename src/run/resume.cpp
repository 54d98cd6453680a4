#include "xl/run/resume.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "xl/run/checkpoint.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

namespace xl::run {

namespace {

// last.pt and best.pt where they are, the one written last first: best.pt is written first and
// then copied to last.pt, so a newer best.pt is what a kill between the two left.
std::vector<std::filesystem::path> last_and_best(const RunPaths& paths) {
  std::vector<std::filesystem::path> candidates;
  std::error_code ec;
  for (const auto& file : {paths.last_checkpoint(), paths.best_checkpoint()}) {
    if (std::filesystem::exists(file, ec)) {
      candidates.push_back(file);
    }
  }
  if (candidates.size() == 2 &&
      std::filesystem::last_write_time(candidates[1], ec) >
          std::filesystem::last_write_time(candidates[0], ec)) {
    std::swap(candidates[0], candidates[1]);
  }
  return candidates;
}

// The step of `file` when it verifies and `resumable` accepts it; else why not, in
// `passed_over`.
std::optional<int64_t> resumable_step(
    const std::filesystem::path& file,
    const ResumableCheck& resumable,
    std::vector<std::string>& passed_over) {
  const std::string name = file.filename().string();
  torch::serialize::InputArchive archive;
  int64_t step = 0;
  try {
    step = load_checkpoint(file, archive).step;
  } catch (const UserError& e) {
    passed_over.push_back(fmt::format("{}: {}", name, e.what()));
    return std::nullopt;
  }
  if (resumable && !resumable(archive)) {
    passed_over.push_back(fmt::format(
        "{}: weights only, no training state (an import or an average: start a new run from it "
        "with train.init_from)",
        name));
    return std::nullopt;
  }
  return step;
}

} // namespace

std::optional<ResumePoint> find_resume_point(
    const RunPaths& paths,
    const ResumableCheck& resumable,
    std::vector<std::string>& passed_over) {
  std::error_code ec;
  if (!std::filesystem::exists(paths.last_checkpoint(), ec)) {
    passed_over.push_back("last.pt: missing");
  }
  for (const auto& file : last_and_best(paths)) {
    if (const auto step = resumable_step(file, resumable, passed_over)) {
      return ResumePoint{file, *step};
    }
  }
  std::optional<ResumePoint> newest;
  for (const auto& file : paths.snapshots()) {
    const auto step = resumable_step(file, resumable, passed_over);
    if (step && (!newest || *step > newest->step)) {
      newest = ResumePoint{file, *step};
    }
  }
  return newest;
}

bool holds_checkpoints(const RunPaths& paths) {
  std::error_code ec;
  return std::filesystem::exists(paths.last_checkpoint(), ec) ||
      std::filesystem::exists(paths.best_checkpoint(), ec) || !paths.snapshots().empty();
}

std::filesystem::path restore_last_checkpoint(
    const RunPaths& paths,
    const ResumableCheck& resumable) {
  std::vector<std::string> passed_over;
  const auto point = find_resume_point(paths, resumable, passed_over);
  if (!point) {
    throw UserError(fmt::format(
        "--resume: no checkpoint to resume from in {} ({})",
        paths.dir.string(),
        fmt::join(passed_over, "; ")));
  }
  if (point->file != paths.last_checkpoint()) {
    atomic_copy(point->file, paths.last_checkpoint(), "checkpoint");
    logger().warn(
        "resuming from {} (step {}), the newest checkpoint that verifies ({}): copied to last.pt",
        point->file.string(),
        point->step,
        passed_over.empty() ? std::string("last.pt is older")
                            : fmt::format("{}", fmt::join(passed_over, "; ")));
  }
  return point->file;
}

} // namespace xl::run
