#include "xl/app/train.h"

#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <memory>

#include "xl/app/cli.h"
#include "xl/config/config.h"
#include "xl/eval/report.h"
#include "xl/infer/run_tokenizer.h"
#include "xl/models/factory.h"
#include "xl/models/memory_estimate.h"
#include "xl/run/checkpoint.h"
#include "xl/run/logging.h"
#include "xl/run/progress.h"
#include "xl/run/resume.h"
#include "xl/run/run_dir.h"
#include "xl/runtime/cuda.h"
#include "xl/runtime/device.h"
#include "xl/runtime/distributed.h"
#include "xl/runtime/signals.h"
#include "xl/sources/dataset.h"
#include "xl/train/data_parallel.h"
#include "xl/train/init_from.h"
#include "xl/train/parameter_groups.h"
#include "xl/train/trainer.h"
#include "xl/train/training_state.h"
#include "xl/util/error.h"
#include "xl/util/log.h"

namespace xl::app {

namespace {

// What a run did, for stdout (the logs go to stderr).
std::string training_summary(
    const config::Config& config,
    const run::RunPaths& paths,
    const train::TrainResult& result,
    formats::VocabKind unit) {
  const int64_t max_step = config.train.max_step;
  std::string how = "finished";
  std::string next =
      fmt::format("evaluate: {} --run {}", app_command("xl-eval"), shell_quote(paths.dir.string()));
  if (result.signal != 0) {
    how = fmt::format("stopped by signal {}", result.signal);
  } else if (result.stopped_early) {
    how = fmt::format(
        "stopped early ({} validations in a row without a new best: train.early_stop)",
        *config.train.early_stop);
  } else if (result.step < max_step) {
    how = "stopped (--stop-at-step)";
  }
  if (result.step < max_step && !result.stopped_early) {
    next = fmt::format(
        "continue: {} --config {} --resume",
        app_command("xl-train"),
        shell_quote(paths.config.string()));
  }
  std::string text = fmt::format(
      "{}: {} at step {} of {} ({} steps from step {} in {})\n",
      paths.dir.string(),
      how,
      result.step,
      max_step,
      result.step - result.first_step,
      result.first_step,
      run::format_duration(result.seconds));
  if (!result.last_train.empty()) {
    text +=
        fmt::format("  train (last logged window){}\n", eval::terms_line(result.last_train, unit));
  }
  if (!result.last_valid.empty()) {
    text += fmt::format(
        "  valid (step {}){}\n", result.last_valid_step, eval::terms_line(result.last_valid, unit));
  }
  if (std::isfinite(result.best_valid_loss)) {
    text += fmt::format(
        "  best validation loss {:.4f}: {}\n",
        result.best_valid_loss,
        paths.best_checkpoint().string());
  }
  text += fmt::format("  last checkpoint: {}\n", paths.last_checkpoint().string());
  text += fmt::format("  {}\n", next);
  return text;
}

// The device of this process: under torchrun, LOCAL_RANK's GPU (also for tensors made without a
// device index). A batch that does not split over the processes fails here.
torch::Device training_device(
    const config::Config& config,
    const std::optional<runtime::DistributedEnv>& env) {
  const int64_t ranks = env ? env->world_size : 1;
  if (config.train.batch_size % (ranks * config.train.batch_chunk) != 0) {
    throw ConfigError(fmt::format(
        "train.batch_size {} must split into {} processes x train.batch_chunk {}",
        config.train.batch_size,
        ranks,
        config.train.batch_chunk));
  }
  torch::Device device = runtime::pick_device(config.train);
  if (env && device.is_cuda()) {
    device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(env->local_rank));
    runtime::set_cuda_device(device);
  }
  return device;
}

// The run directory, prepared and locked by rank 0 alone (the others learn whether it could),
// and the logs: to its train.log, and on the other ranks only warnings and errors, which would
// repeat rank 0's lines.
run::RunPaths open_run_directory(
    const config::Config& config,
    bool resume,
    const formats::Tokenizer& tokenizer,
    const std::optional<runtime::DistributedEnv>& env,
    runtime::Group* group) {
  // The run keeps its data's tokenizer, so that it opens without the data (infer/run_tokenizer).
  // A resumed run's is its checkpoints' vocabulary, which the trainer checks the data against.
  const auto prepare = [&] {
    auto paths = run::prepare_directory(config, resume, train::holds_training_state);
    if (!resume || !infer::run_tokenizer(paths.dir)) {
      infer::keep_tokenizer(paths.dir, tokenizer, /*replace=*/true);
    }
    return paths;
  };
  if (!env) {
    auto paths = prepare();
    run::setup_logging(config.run.log_level, paths.log);
    return paths;
  }
  run::RunPaths paths;
  std::string failure;
  if (env->rank == 0) {
    try {
      paths = prepare();
    } catch (const UserError& e) {
      failure = e.what();
    }
  }
  if (group->any(!failure.empty())) {
    throw UserError(
        env->rank == 0 ? failure
                       : fmt::format(
                             "rank {}: rank 0 could not prepare the run directory (its error says "
                             "why)",
                             env->rank));
  }
  if (env->rank != 0) {
    paths = run::paths_of(run::directory_of(config));
  }
  run::setup_logging(
      env->rank == 0 ? config.run.log_level : "warn",
      env->rank == 0 ? std::optional(paths.log) : std::nullopt);
  logger().info(
      "data-parallel training on {} processes: each trains {} of every batch's {} rows",
      env->world_size,
      config.train.batch_size / env->world_size,
      config.train.batch_size);
  return paths;
}

// Gradient reduction over the processes, of the parameters that train.
std::unique_ptr<train::DataParallel> reduce_gradients(
    runtime::Group& group,
    models::LanguageModelImpl& model) {
  std::vector<std::pair<std::string, torch::Tensor>> named;
  for (const auto& item : model.named_parameters()) {
    if (item.value().requires_grad()) {
      named.emplace_back(item.key(), item.value());
    }
  }
  return std::make_unique<train::DataParallel>(group, named);
}

// A resumed run's data against the vocabulary it keeps, before a model of the data's size is
// built: data prepared again with another vocabulary failed on the model's sizes first.
void check_resumed_vocabulary(const config::Config& config, const sources::Dataset& dataset) {
  const auto paths = run::paths_of(run::directory_of(config));
  if (const auto kept = infer::run_tokenizer(paths.dir)) {
    run::require_same_vocabulary(
        paths.last_checkpoint(),
        kept->fingerprint(),
        dataset.vocabulary_fingerprint(),
        dataset.vocabulary_file());
  }
}

// The data, checked against a resumed run's vocabulary and for the memory training needs.
auto open_training_data(
    const config::Config& config,
    bool resume,
    const torch::Device& device,
    bool enforce_memory) {
  auto dataset = models::open_dataset(config);
  if (resume) {
    check_resumed_vocabulary(config, *dataset);
  }
  dataset->prepare_training();
  models::check_memory(
      models::estimate_training_memory(config, dataset->vocab_size()),
      "training",
      device,
      enforce_memory);
  return dataset;
}

} // namespace

int run_training(
    const config::Config& config,
    bool resume,
    std::optional<int64_t> stop_at,
    bool enforce_memory,
    bool finished_ok) {
  // 1. Data, model and initial weights first: a bad corpus, batch setting, size or init_from
  //    fails before the run directory is written. Under torchrun this process is one rank of
  //    a data-parallel run.
  runtime::setup_runtime(config.train);
  // The console's format from the first line (a rank waiting for its peers logs before the run
  // directory, and its train.log, are open).
  run::setup_logging(config.run.log_level);
  const auto env = runtime::distributed_env();
  const torch::Device device = training_device(config, env);
  const auto dataset = open_training_data(config, resume, device, enforce_memory);
  auto model = models::build_model(config, dataset->vocab_size());
  const std::string initialised =
      config.train.init_from && !resume ? train::load_initial_weights(config, *model) : "";
  // 2. Which parameters train (a bad train.freeze fails here, before the run directory is
  //    written); the frozen ones compute no gradient, and data-parallel training reduces the
  //    others only.
  train::plan_parameters(config, *model);
  // 3. The process group (a dead peer is noticed at once, a hung one after train.dist_timeout_s)
  //    and the
  //    run directory.
  std::unique_ptr<runtime::Group> group;
  if (env) {
    group = std::make_unique<runtime::Group>(
        *env,
        device,
        std::chrono::milliseconds(static_cast<int64_t>(config.train.dist_start_timeout_s * 1000.0)),
        std::chrono::milliseconds(static_cast<int64_t>(config.train.dist_timeout_s * 1000.0)));
    // What the config does not say: the deadline, and the vocabulary data.dir resolves to.
    train::require_same_setup(
        *group,
        config,
        *model,
        {{"--stop-at-step", stop_at ? std::to_string(*stop_at) : ""},
         {"the data's vocabulary", dataset->vocabulary_fingerprint()}});
  }
  const run::RunPaths paths =
      open_run_directory(config, resume, *dataset->tokenizer(), env, group.get());
  logger().info(
      "run directory {} (resolved config: {})", paths.dir.string(), paths.config.string());
  logger().info("data {}: {}", config.data.dir, dataset->describe());
  if (!initialised.empty()) {
    logger().info("{}", initialised);
  }
  // 4. Training, and what it did on stdout.
  model->to(device);
  if (const auto graphs = models::use_cuda_graphs(*model, config, device); !graphs.empty()) {
    logger().info("{}", graphs);
  }
  const auto parallel = group ? reduce_gradients(*group, *model) : nullptr;
  runtime::install_stop_handlers();
  runtime::install_checkpoint_handler();
  train::Trainer trainer(config, paths, *dataset, model, device, parallel.get());
  const train::TrainResult result = trainer.run(resume, stop_at, finished_ok);
  if (!env || env->rank == 0) {
    std::cout << training_summary(config, paths, result, dataset->unit()) << std::flush;
  }
  return result.signal != 0 ? 128 + result.signal : 0;
}

int add_tokenizer(const config::Config& config, const std::filesystem::path& run_dir) {
  run::setup_logging(config.run.log_level);
  const run::RunPaths paths = run::paths_of(run_dir);
  if (!run::holds_checkpoints(paths)) {
    throw UserError(fmt::format(
        "{} holds no checkpoints: --add-tokenizer gives a trained run the tokenizer of its data",
        run_dir.string()));
  }
  sources::check_data_dir(config.data.dir);
  const auto tokenizer =
      formats::Tokenizer::load(std::filesystem::path(config.data.dir) / config.data.vocab);
  // Every checkpoint names the vocabulary it was trained with: the data's must be it.
  std::vector<std::filesystem::path> checkpoints = paths.snapshots();
  for (const auto& file : {paths.best_checkpoint(), paths.last_checkpoint()}) {
    std::error_code ec;
    if (std::filesystem::exists(file, ec)) {
      checkpoints.push_back(file);
    }
  }
  for (const auto& file : checkpoints) {
    torch::serialize::InputArchive archive;
    const auto info = run::load_checkpoint(file, archive);
    run::require_same_vocabulary(
        file, info.vocabulary, tokenizer->fingerprint(), tokenizer->file());
  }
  const bool added = infer::keep_tokenizer(run_dir, *tokenizer);
  std::cout << fmt::format(
                   "{} {} ({}): the run opens without its data",
                   added ? "added" : "the run holds",
                   infer::run_tokenizer_path(run_dir, *tokenizer).string(),
                   tokenizer->fingerprint())
            << std::endl;
  return 0;
}

} // namespace xl::app
