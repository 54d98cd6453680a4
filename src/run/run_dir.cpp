#include "xl/run/run_dir.h"

#include "xl/config/config.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::run {

std::filesystem::path RunPaths::last_checkpoint() const {
  return checkpoints / "last.pt";
}

std::filesystem::path RunPaths::best_checkpoint() const {
  return checkpoints / "best.pt";
}

std::filesystem::path run_directory(const config::Config& config) {
  return config.run.dir ? std::filesystem::path(*config.run.dir)
                        : std::filesystem::path("runs") / config.run.name;
}

RunPaths run_paths(const std::filesystem::path& dir) {
  return RunPaths{
      dir,
      dir / "config.yaml",
      dir / "train.log",
      dir / "metrics.jsonl",
      dir / "checkpoints"};
}

RunPaths prepare_run_directory(const config::Config& config, bool resume) {
  const RunPaths paths = run_paths(run_directory(config));
  std::error_code ec;
  const bool has_checkpoint =
      std::filesystem::exists(paths.last_checkpoint(), ec);
  if (resume && !has_checkpoint) {
    throw UserError(
        "--resume: no checkpoint to resume from in " + paths.dir.string() +
        " (expected " + paths.last_checkpoint().string() + ")");
  }
  if (!resume && has_checkpoint) {
    throw UserError(
        "run directory " + paths.dir.string() +
        " already holds checkpoints; pass --resume to continue that run, or "
        "choose another run.name or run.dir");
  }
  std::filesystem::create_directories(paths.checkpoints, ec);
  if (ec) {
    throw UserError(
        "cannot create run directory " + paths.dir.string() + ": " +
        ec.message());
  }
  atomic_write(paths.config, config::dump(config));
  return paths;
}

} // namespace xl::run
