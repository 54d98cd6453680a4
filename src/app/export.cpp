#include "xl/app/export.h"

#include <fmt/format.h>

#include <iostream>

#include "xl/app/cli.h"
#include "xl/infer/run_tokenizer.h"
#include "xl/infer/trained_run.h"
#include "xl/io/safetensors.h"
#include "xl/models/factory.h"
#include "xl/models/hf.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/run/run_dir.h"
#include "xl/sources/dataset.h"
#include "xl/util/files.h"

namespace xl::app {

int run_export(const config::Config& config, const ExportRequest& request) {
  run::setup_logging(config.run.log_level);
  const auto out = run::check_output_folder("--out", request.out, request.force);
  // Checked before the weights are read: what HF cannot express fails at once, unless the
  // config is not the checkpoint's, which is said first.
  const auto dataset =
      models::open_dataset(config, infer::open_run_tokenizer(config, request.run_dir));
  nlohmann::json hf;
  try {
    hf = models::hf_config(config, *dataset);
  } catch (const UserError&) {
    infer::require_checkpoint_config(config, run::paths_of(request.run_dir), request.checkpoint);
    throw;
  }
  hf["xl_version"] = version_line();
  infer::OpenOptions open;
  open.checkpoint = request.checkpoint;
  open.device = torch::kCPU;
  const auto trained = infer::TrainedRun::open(config, request.run_dir, open);
  run::create_output_folder("--out", out);
  io::save_safetensors(
      out / "model.safetensors", models::hf_state(trained->model()), {{"format", "pt"}});
  atomic_write(out / "config.json", hf.dump(2) + "\n");
  const auto vocabulary = dataset->vocabulary_file();
  std::filesystem::copy_file(
      vocabulary, out / vocabulary.filename(), std::filesystem::copy_options::overwrite_existing);
  // An earlier export of another family (--force) left the other vocabulary, which HF's
  // tokenizers would read beside this one.
  for (const char* other : {"vocab.txt", "spiece.model"}) {
    if (vocabulary.filename() != other) {
      std::error_code ec;
      std::filesystem::remove(out / other, ec);
    }
  }
  std::cout << fmt::format(
                   "exported {} (step {}) as {} to {} (config.json, model.safetensors, {}); "
                   "in Python: {}.from_pretrained(\"{}\")",
                   trained->checkpoint().string(),
                   trained->step(),
                   hf["architectures"][0].get<std::string>(),
                   out.string(),
                   vocabulary.filename().string(),
                   hf["architectures"][0].get<std::string>(),
                   out.string())
            << std::endl;
  return 0;
}

} // namespace xl::app
