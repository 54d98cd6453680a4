#include "xl/infer/trained_run.h"

#include <ATen/CPUGeneratorImpl.h>

#include "xl/config/config.h"
#include "xl/infer/run_tokenizer.h"
#include "xl/io/archive.h"
#include "xl/models/factory.h"
#include "xl/models/layer_stack.h"
#include "xl/models/memory_estimate.h"
#include "xl/run/checkpoint.h"
#include "xl/runtime/device.h"
#include "xl/util/generator.h"

namespace xl::infer {

void require_checkpoint_config(
    const config::Config& config,
    const run::RunPaths& paths,
    const std::string& checkpoint_name) {
  const auto file = paths.checkpoint(checkpoint_name);
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(file, archive);
  run::require_matching_config(file, info.config, config::dump(config), {"model", "data"});
}

std::shared_ptr<const TrainedRun> TrainedRun::open(
    config::Config config,
    const std::filesystem::path& run_dir,
    const OpenOptions& options) {
  const torch::Device device =
      options.device ? *options.device : runtime::pick_device(config.train);
  std::shared_ptr<TrainedRun> run(new TrainedRun());
  run->paths_ = run::paths_of(run_dir);
  // The checkpoint's config and vocabulary first: another data.dir is named as such, before the
  // model's settings are judged against its vocabulary. The data may sit elsewhere, or nowhere
  // (the run keeps its tokenizer), and other splits may be read: the vocabulary is what must be
  // the checkpoint's.
  run->checkpoint_ = run->paths_.checkpoint(options.checkpoint);
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(run->checkpoint_, archive);
  run::require_matching_config(
      run->checkpoint_,
      info.config,
      config::dump(config),
      {"model", "data"},
      {"data.dir", "data.valid", "data.test"});
  run->tokenizer_ = open_run_tokenizer(config, run_dir);
  run->data_ = models::open_dataset(config, run->tokenizer_);
  run::require_same_vocabulary(
      run->checkpoint_, info.vocabulary, run->tokenizer_->fingerprint(), run->tokenizer_->file());
  models::check_memory(
      models::estimate_evaluation_memory(config, run->data_->vocab_size()),
      options.use,
      device,
      options.enforce_memory);
  {
    // The initial weights are drawn and replaced: the program's random sequence goes on as if
    // nothing had been drawn.
    const util::KeptGeneratorState kept(at::detail::getDefaultCPUGenerator());
    run->model_ = models::build_model(config, run->data_->vocab_size());
  }
  io::read_module(archive, "model", *run->model_, run->checkpoint_.string());
  run->model_->to(device);
  run->model_->eval();
  if (options.graphs) {
    run->graphs_note_ = models::use_cuda_graphs(*run->model_, config, device);
    run->graphed_ = models::uses_graphs(*run->model_);
  }
  run->device_ = device;
  run->step_ = info.step;
  run->saved_config_ = info.config;
  run->vocabulary_ = info.vocabulary;
  run->config_ = std::move(config);
  return run;
}

std::unique_lock<std::mutex> TrainedRun::graph_lock() const {
  return graphed_ ? std::unique_lock<std::mutex>(graph_mutex_) : std::unique_lock<std::mutex>();
}

} // namespace xl::infer
