// Fuzz target: checkpoint files (run::load_checkpoint, then the model's tensors, the saved
// config against the current one and the vocabulary record), as --resume and xl-eval read them.
// A file without xl's checksum trailer is read unverified (checkpoints of earlier xl versions),
// so mutated archives reach LibTorch's reader and xl's checks behind it.
#include <torch/torch.h>

#include "fuzz_util.h"
#include "xl/config/config.h"
#include "xl/io/archive.h"
#include "xl/models/factory.h"
#include "xl/run/checkpoint.h"
#include "xl/util/files.h"

using namespace xl::fuzz;

namespace {

constexpr int64_t kVocab = 50;

const xl::config::Config& config() {
  static const xl::config::Config c = [] {
    const fs::path path = work_dir() / "tiny.yaml";
    xl::atomic_write(
        path,
        "model: {type: transformer_xl, n_layer: 1, n_head: 2, d_model: 8, d_head: 4, "
        "d_inner: 16, transformer_xl: {mem_len: 4}}\n"
        "data: {dir: data}\n"
        "train: {max_step: 10, tgt_len: 4}\n");
    return xl::config::load(path.string());
  }();
  return c;
}

const std::string kVocabulary = "word 50 0123456789abcdef";

} // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  // LibTorch reports a malformed archive through its enforce macro, which logs a fatal error
  // and aborts instead of throwing when this flag is set. The apps read it as false; this
  // sanitized build starts with a nonzero byte there (UBSan: "load of value 26 ... for type
  // bool"), so it is cleared for the archive errors to throw as they do in the apps.
  FLAGS_caffe2_use_fatal_for_enforce = false;
  torch::manual_seed(0);
  if (const auto dir = seeds_dir()) {
    const auto model = xl::models::build_model(config(), kVocab);
    const fs::path path = work_dir() / "seed.pt";
    xl::run::save_checkpoint(
        path,
        xl::run::CheckpointInfo{
            xl::run::kCheckpointFormat, 7, xl::config::dump(config()), kVocabulary},
        [&](torch::serialize::OutputArchive& archive) {
          xl::io::write_module(archive, "model", *model);
        });
    const std::string sealed = xl::read_file(path);
    write_seed(*dir, "sealed.pt", sealed);
    // The same archive without its trailer, as an earlier xl wrote it.
    write_seed(*dir, "unsealed.pt", sealed.substr(0, sealed.size() - 24));
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path path = input_file(data, size, "last.pt");
  accepted_or_refused([&] {
    torch::serialize::InputArchive archive;
    const auto info = xl::run::load_checkpoint(path, archive);
    xl::run::require_matching_config(
        path, info.config, xl::config::dump(config()), {"model", "data"});
    xl::run::require_same_vocabulary(path, info.vocabulary, kVocabulary, "vocab.txt");
    const auto model = xl::models::build_model(config(), kVocab);
    xl::io::read_module(archive, "model", *model, path.string());
  });
  return 0;
}
