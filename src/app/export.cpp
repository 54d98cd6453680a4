#include "xl/app/export.h"

#include <fmt/format.h>

#include <iostream>
#include <set>

#include "xl/app/cli.h"
#include "xl/formats/token_file.h"
#include "xl/infer/run_tokenizer.h"
#include "xl/infer/trained_run.h"
#include "xl/io/safetensors.h"
#include "xl/models/factory.h"
#include "xl/models/hf.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/run/run_dir.h"
#include "xl/sources/dataset.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"
#include "xl/util/staged_folder.h"

namespace xl::app {

namespace {

// The tokenizer as HF's reads it into `folder`: spiece.model as it is, a word vocabulary
// without xl's header (TransfoXLTokenizer would take the header for a symbol and shift every id
// by one), and tokenizer_config.json.
void write_tokenizer(const sources::Dataset& dataset, const std::filesystem::path& folder) {
  const auto vocabulary = dataset.vocabulary_file();
  const auto files = models::hf_tokenizer_files(*dataset.tokenizer());
  if (files.count(vocabulary.filename().string()) == 0) {
    atomic_copy(vocabulary, folder / vocabulary.filename(), "vocabulary");
  }
  for (const auto& [name, content] : files) {
    atomic_write(folder / name, content);
  }
  const auto* vocab = dataset.tokenizer()->vocab();
  if (vocab && !vocab->has_unknown_token()) {
    logger().warn(
        "the vocabulary has no <unk>: Hugging Face's TransfoXLTokenizer refuses to load it "
        "(the model loads; prepare the data with xl-prep --unk for a tokenizer too)");
  }
  if (vocab && vocab->tokenization() == formats::Tokenization::kNone) {
    logger().warn(
        "the vocabulary's text was split at blanks (tokenization none), and Hugging Face's "
        "TransfoXLTokenizer splits a raw text by WikiText's rules: give it words split at "
        "blanks (tokenizer.convert_tokens_to_ids(text.split())) for xl's numbers");
  }
}

} // namespace

int run_export(const config::Config& config, const ExportRequest& request) {
  run::setup_logging(config.run.log_level);
  const auto out = run::check_output_folder("--out", request.out, request.force);
  std::error_code ec;
  if (const auto data =
          std::filesystem::is_directory(out, ec) ? formats::prepared_data_in(out) : std::nullopt) {
    throw UserError(fmt::format(
        "--out {} is a data folder xl-prep wrote (it holds {}), which runs read: an export "
        "never writes into one, --force neither; name another folder",
        request.out,
        data->filename().string()));
  }
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
  // The folder swapped in whole: a kill leaves the earlier export or this one, never a mix.
  if (out.has_parent_path()) {
    run::create_output_folder("--out", out.parent_path());
  }
  StagedFolder staged(out, "xl-export --out");
  io::save_safetensors(
      staged.path() / "model.safetensors", models::hf_state(trained->model()), {{"format", "pt"}});
  atomic_write(staged.path() / "config.json", hf.dump(2) + "\n");
  const auto vocabulary = dataset->vocabulary_file();
  write_tokenizer(*dataset, staged.path());
  // An earlier export of another family (--force) left the other vocabulary, which HF's
  // tokenizers would read beside this one.
  std::set<std::string> others{"vocab.txt", "spiece.model"};
  others.erase(vocabulary.filename().string());
  staged.commit(others);
  std::cout << fmt::format(
                   "exported {} (step {}) as {} to {} (config.json, model.safetensors, {}, "
                   "tokenizer_config.json); in Python: {}.from_pretrained(\"{}\") and "
                   "AutoTokenizer.from_pretrained(\"{}\")",
                   trained->checkpoint().string(),
                   trained->step(),
                   hf["architectures"][0].get<std::string>(),
                   out.string(),
                   vocabulary.filename().string(),
                   hf["architectures"][0].get<std::string>(),
                   out.string(),
                   out.string())
            << std::endl;
  return 0;
}

} // namespace xl::app
