#include "xl/train/session.h"

#include <spdlog/spdlog.h>

#include "xl/config/config.h"
#include "xl/data/corpus.h"
#include "xl/io/safetensors.h"
#include "xl/models/factory.h"
#include "xl/models/hf_import.h"
#include "xl/run/checkpoint.h"
#include "xl/run/logging.h"
#include "xl/run/metrics.h"
#include "xl/run/progress.h"
#include "xl/run/run_dir.h"
#include "xl/train/evaluator.h"
#include "xl/train/trainer.h"
#include "xl/util/error.h"

namespace xl::train {

torch::Device pick_device(const std::string& device) {
  if (device == "cpu") {
    return torch::kCPU;
  }
  if (torch::cuda::is_available()) {
    return torch::kCUDA;
  }
  if (device == "cuda") {
    throw UserError("train.device is cuda, but no CUDA device is available");
  }
  return torch::kCPU;
}

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
  const torch::Device device = pick_device(config.train.device);
  auto model = models::build_model(config.model, corpus.vocab().size());
  install_stop_handlers();
  Trainer trainer(config, paths, corpus, model, device);
  const TrainResult result = trainer.run(resume, stop_at);
  if (result.signal != 0) {
    return 128 + result.signal;
  }
  const auto m = metric(corpus.vocab().kind(), result.best_valid_loss);
  spdlog::info(
      "done at step {}: best validation loss {:.4f} ({} {:.3f}); evaluate with xl-eval "
      "--run {}",
      result.step,
      result.best_valid_loss,
      m.name,
      m.value,
      paths.dir.string());
  return 0;
}

int run_evaluation(const config::Config& config, const EvalRequest& request) {
  run::setup_logging(config.run.log_level);
  const run::RunPaths paths = run::run_paths(request.run_dir);
  const auto checkpoint = request.checkpoint == "last"
      ? paths.last_checkpoint()
      : paths.best_checkpoint();
  if (config.train.threads > 0) {
    torch::set_num_threads(static_cast<int>(config.train.threads));
  }
  data::Corpus corpus(config.data);
  const auto& tokens = corpus.split(config.eval.split);
  const torch::Device device = pick_device(config.train.device);
  auto model = models::build_model(config.model, corpus.vocab().size());
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(checkpoint, archive);
  run::require_matching_config(
      checkpoint, info.config, config::dump(config), {"model", "data"});
  torch::serialize::InputArchive model_archive;
  archive.read("model", model_archive);
  model->load(model_archive);
  model->to(device);

  EvalResult result;
  std::string setting;
  if (config.eval.mode == "vanilla") {
    const int64_t window = config.train.tgt_len;
    setting = fmt::format(
        "vanilla: window {}, last position scored, {} windows per batch",
        window,
        config.eval.batch_size);
    spdlog::info(
        "evaluating {} (step {}) on {}, {}",
        checkpoint.string(),
        info.step,
        config.eval.split,
        setting);
    result = evaluate_vanilla(
        *model,
        tokens,
        window,
        config.eval.batch_size,
        request.max_steps,
        device,
        config.train.bf16);
  } else {
    auto settings = eval_settings(config, false);
    settings.max_steps = request.max_steps;
    setting = fmt::format(
        "tgt_len {}, mem_len {}, clamp_len {}, same_length {}, batch {}",
        settings.tgt_len,
        settings.lengths.mem_len,
        settings.lengths.clamp_len,
        settings.lengths.same_length,
        settings.batch_size);
    spdlog::info(
        "evaluating {} (step {}) on {}: {}",
        checkpoint.string(),
        info.step,
        config.eval.split,
        setting);
    result = evaluate(*model, tokens, settings, device, config.train.bf16);
  }
  const auto m = metric(corpus.vocab().kind(), result.loss());
  spdlog::info(
      "{} | loss {:.4f} | {} {:.3f} | {} tokens | {} tok/s",
      config.eval.split,
      result.loss(),
      m.name,
      m.value,
      result.count,
      run::format_count(result.tokens_per_second()));
  run::MetricsWriter(paths.metrics)
      .write(
          {{"step", info.step},
           {"split", config.eval.split},
           {"mode", config.eval.mode},
           {"setting", setting},
           {"checkpoint", request.checkpoint},
           {"loss", result.loss()},
           {m.name, m.value},
           {"tokens", result.count},
           {"tokens_per_s", result.tokens_per_second()}});
  return 0;
}

int run_import(const config::Config& config, const ImportRequest& request) {
  run::setup_logging(config.run.log_level);
  data::Corpus corpus(config.data);
  auto model = models::build_model(config.model, corpus.vocab().size());
  auto* txl = dynamic_cast<models::TransformerXLImpl*>(model.get());
  if (txl == nullptr) {
    throw ConfigError(
        "model.type: only transformer_xl weights can be imported");
  }
  models::HFImportOptions options;
  options.reverse_clusters = request.reverse_clusters;
  models::import_hf_transfo_xl(
      *txl, io::SafeTensors::load(request.weights), options);
  const run::RunPaths paths = run::prepare_run_directory(config, false);
  run::save_checkpoint(
      paths.best_checkpoint(),
      run::CheckpointInfo{run::kCheckpointFormat, 0, config::dump(config)},
      [&](torch::serialize::OutputArchive& archive) {
        torch::serialize::OutputArchive model_archive;
        model->save(model_archive);
        archive.write("model", model_archive);
      });
  spdlog::info(
      "imported {} ({} parameters) into {}; evaluate with xl-eval --run {}",
      request.weights,
      models::count_parameters(*model),
      paths.best_checkpoint().string(),
      paths.dir.string());
  return 0;
}

} // namespace xl::train
