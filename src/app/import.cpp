#include "xl/app/import.h"

#include "xl/app/cli.h"
#include "xl/config/config.h"
#include "xl/infer/run_tokenizer.h"
#include "xl/io/archive.h"
#include "xl/io/safetensors.h"
#include "xl/models/factory.h"
#include "xl/models/hf.h"
#include "xl/models/memory_estimate.h"
#include "xl/run/checkpoint.h"
#include "xl/run/logging.h"
#include "xl/run/run_dir.h"
#include "xl/sources/dataset.h"
#include "xl/train/training_state.h"
#include "xl/util/log.h"

namespace xl::app {

int run_import(const config::Config& config, const ImportRequest& request) {
  run::setup_logging(config.run.log_level);
  run::check_new_directory(config, train::holds_training_state); // the outputs first
  const auto dataset = models::open_dataset(
      config, request.tokenizer ? models::read_hf_tokenizer(*request.tokenizer) : nullptr);
  models::check_memory(
      models::estimate_evaluation_memory(config, dataset->vocab_size()),
      "the imported model",
      torch::kCPU,
      request.enforce_memory);
  // What Hugging Face has no model for (another family, absolute attention) fails before the
  // weights are read, as xl-export does.
  models::hf_config(config, *dataset);
  auto model = models::build_model(config, dataset->vocab_size());
  const auto weights = io::SafeTensors::load(request.weights);
  models::HFImportOptions options;
  options.reverse_clusters = request.reverse_clusters;
  models::import_hf(*model, weights, options);
  const run::RunPaths paths = run::prepare_directory(config, false, train::holds_training_state);
  run::save_checkpoint(
      paths.best_checkpoint(),
      run::CheckpointInfo{
          run::kCheckpointFormat, 0, config::dump(config), dataset->vocabulary_fingerprint()},
      [&](torch::serialize::OutputArchive& archive) {
        io::write_module(archive, "model", *model);
      });
  infer::keep_tokenizer(paths.dir, *dataset->tokenizer());
  logger().info(
      "imported {} ({} parameters) into {}; evaluate with {} --run {}",
      request.weights,
      models::count_parameters(*model),
      paths.best_checkpoint().string(),
      app_command("xl-eval"),
      shell_quote(paths.dir.string()));
  return 0;
}

} // namespace xl::app
