#include "xl/app/trained_model.h"

#include "xl/config/config.h"
#include "xl/io/archive.h"
#include "xl/models/factory.h"
#include "xl/models/memory_estimate.h"
#include "xl/run/checkpoint.h"

namespace xl::app {

void require_checkpoint_config(
    const config::Config& config,
    const run::RunPaths& paths,
    const std::string& checkpoint_name) {
  const auto file = paths.checkpoint(checkpoint_name);
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(file, archive);
  run::require_matching_config(file, info.config, config::dump(config), {"model", "data"});
}

TrainedModel load_trained_model(
    const config::Config& config,
    const run::RunPaths& paths,
    const std::string& checkpoint_name,
    const sources::Dataset& dataset,
    const torch::Device& device,
    bool enforce_memory,
    const char* use) {
  // The checkpoint's config and vocabulary first: another data.dir is named as such, before the
  // model's settings are judged against its vocabulary. The data may sit elsewhere, and other
  // splits may be read: the vocabulary is what must be the checkpoint's.
  const auto checkpoint = paths.checkpoint(checkpoint_name);
  torch::serialize::InputArchive archive;
  const auto info = run::load_checkpoint(checkpoint, archive);
  run::require_matching_config(
      checkpoint,
      info.config,
      config::dump(config),
      {"model", "data"},
      {"data.dir", "data.valid", "data.test"});
  run::require_same_vocabulary(
      checkpoint, info.vocabulary, dataset.vocabulary_fingerprint(), dataset.vocabulary_file());
  models::check_memory(
      models::estimate_evaluation_memory(config, dataset.vocab_size()),
      use,
      device,
      enforce_memory);
  TrainedModel out{
      models::build_model(config, dataset.vocab_size()), checkpoint, info.step, info.config};
  io::read_module(archive, "model", *out.model, out.checkpoint.string());
  out.model->to(device);
  return out;
}

} // namespace xl::app
