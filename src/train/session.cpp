#include "xl/train/session.h"

#include <spdlog/spdlog.h>

#include "xl/config/config.h"
#include "xl/data/corpus.h"
#include "xl/run/logging.h"
#include "xl/run/metrics.h"
#include "xl/run/run_dir.h"
#include "xl/util/error.h"

namespace xl::train {

int run_training(const config::Config& config, bool resume) {
  const run::RunPaths paths = run::prepare_run_directory(config, resume);
  run::setup_logging(config.run.log_level, paths.log);
  spdlog::info(
      "run directory {} (config: {})",
      paths.dir.string(),
      paths.config.string());
  if (config.train.threads > 0) {
    torch::set_num_threads(static_cast<int>(config.train.threads));
  }
  torch::manual_seed(static_cast<uint64_t>(config.train.seed));
  data::Corpus corpus(config.data);
  const auto& train = corpus.split("train");
  const auto& valid = corpus.split("valid");
  spdlog::info(
      "data {}: {}-level vocabulary of {}, {} training and {} validation tokens",
      config.data.dir,
      data::to_string(corpus.vocab().kind()),
      corpus.vocab().size(),
      train.size(),
      valid.size());
  throw UserError(
      "model.type '" + config.model.type +
      "' cannot be trained by this build yet");
}

int run_evaluation(
    const config::Config& config,
    const std::string& run_dir,
    const std::string& which) {
  run::setup_logging(config.run.log_level);
  const run::RunPaths paths = run::run_paths(run_dir);
  data::Corpus corpus(config.data);
  spdlog::info(
      "evaluating {} checkpoint of {} on {} ({} tokens)",
      which,
      paths.dir.string(),
      config.eval.split,
      corpus.split(config.eval.split).size());
  throw UserError(
      "model.type '" + config.model.type +
      "' cannot be evaluated by this build yet");
}

} // namespace xl::train
