#include "xl/app/commands.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "xl/config/config.h"
#include "xl/data/corpus.h"
#include "xl/eval/report.h"
#include "xl/eval/setup.h"
#include "xl/io/archive.h"
#include "xl/io/safetensors.h"
#include "xl/models/factory.h"
#include "xl/models/hf_import.h"
#include "xl/run/checkpoint.h"
#include "xl/run/device.h"
#include "xl/run/logging.h"
#include "xl/run/metrics.h"
#include "xl/run/run_dir.h"
#include "xl/train/trainer.h"
#include "xl/util/error.h"

namespace xl::app {

int run_training(
    const config::Config& config,
    bool resume,
    std::optional<int64_t> stop_at) {
  const run::RunPaths paths = run::prepare_run_directory(config, resume);
  run::setup_logging(config.run.log_level, paths.log);
  spdlog::info(
      "run directory {} (resolved config: {})",
      paths.dir.string(),
      paths.config.string());
  run::setup_runtime(config.train);
  data::Corpus corpus(config.data);
  spdlog::info(
      "data {}: {}-level vocabulary of {}, {} training and {} validation tokens",
      config.data.dir,
      data::to_string(corpus.vocab().kind()),
      corpus.vocab().size(),
      corpus.split("train").size(),
      corpus.split("valid").size());
  const torch::Device device = run::pick_device(config.train.device);
  auto model = models::build_model(config.model, corpus.vocab().size());
  train::install_stop_handlers();
  train::Trainer trainer(config, paths, corpus, model, device);
  const train::TrainResult result = trainer.run(resume, stop_at);
  if (result.signal != 0) {
    return 128 + result.signal;
  }
  spdlog::info(
      "done at step {}: best validation loss {:.4f}; evaluate with xl-eval --run {}",
      result.step,
      result.best_valid_loss,
      paths.dir.string());
  return 0;
}

int run_evaluation(const config::Config& config, const EvalRequest& request) {
  run::setup_logging(config.run.log_level);
  const run::RunPaths paths = run::run_paths(request.run_dir);
  const auto checkpoint = request.checkpoint == "last"
      ? paths.last_checkpoint()
      : paths.best_checkpoint();
  run::setup_runtime(config.train);
  data::Corpus corpus(config.data);
  const torch::Device device = run::pick_device(config.train.device);
  auto model = models::build_model(config.model, corpus.vocab().size());
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(checkpoint, archive);
  run::require_matching_config(
      checkpoint, info.config, config::dump(config), {"model", "data"});
  io::read_module(archive, "model", *model);
  model->to(device);

  auto setup =
      eval::eval_setup(config, corpus.split(config.eval.split), false, device);
  setup.options.max_batches = request.max_steps;
  spdlog::info(
      "evaluating {} (step {}) on {}: {}",
      checkpoint.string(),
      info.step,
      config.eval.split,
      setup.setting);
  const auto result = eval::evaluate(*model, *setup.source, setup.options);
  const auto report = eval::report_evaluation(
      config.eval.split,
      result,
      corpus.vocab().kind(),
      {{"step", info.step},
       {"split", config.eval.split},
       {"mode", config::choice_name(config.eval.mode)},
       {"setting", setup.setting},
       {"checkpoint", request.checkpoint}});
  spdlog::info("{}", report.line);
  run::MetricsWriter(paths.metrics).write(report.record);
  return 0;
}

int run_import(const config::Config& config, const ImportRequest& request) {
  run::setup_logging(config.run.log_level);
  if (config.model.type != config::ModelType::kTransformerXL) {
    throw ConfigError(
        "model.type: only transformer_xl weights can be imported");
  }
  data::Corpus corpus(config.data);
  auto model = std::make_shared<models::TransformerXLImpl>(
      models::transformer_xl_options(config.model, corpus.vocab().size()));
  models::HFImportOptions options;
  options.reverse_clusters = request.reverse_clusters;
  models::import_hf_transfo_xl(
      *model, io::SafeTensors::load(request.weights), options);
  const run::RunPaths paths = run::prepare_run_directory(config, false);
  run::save_checkpoint(
      paths.best_checkpoint(),
      run::CheckpointInfo{run::kCheckpointFormat, 0, config::dump(config)},
      [&](torch::serialize::OutputArchive& archive) {
        io::write_module(archive, "model", *model);
      });
  spdlog::info(
      "imported {} ({} parameters) into {}; evaluate with xl-eval --run {}",
      request.weights,
      models::count_parameters(*model),
      paths.best_checkpoint().string(),
      paths.dir.string());
  return 0;
}

} // namespace xl::app
