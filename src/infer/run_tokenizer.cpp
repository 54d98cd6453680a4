#include "xl/infer/run_tokenizer.h"

#include <fmt/format.h>

#include "xl/sources/dataset.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::infer {

namespace {

namespace fs = std::filesystem;

// The names a run's tokenizer has, by kind: those Hugging Face's tokenizers read.
constexpr const char* kVocabFile = "vocab.txt";
constexpr const char* kPiecesFile = "spiece.model";

} // namespace

fs::path run_tokenizer_path(const fs::path& run_dir, const formats::Tokenizer& tokenizer) {
  return run_dir / (tokenizer.vocab() != nullptr ? kVocabFile : kPiecesFile);
}

std::shared_ptr<const formats::Tokenizer> run_tokenizer(const fs::path& run_dir) {
  std::error_code ec;
  for (const char* name : {kVocabFile, kPiecesFile}) {
    if (fs::exists(run_dir / name, ec)) {
      return formats::Tokenizer::load(run_dir / name);
    }
  }
  return nullptr;
}

std::shared_ptr<const formats::Tokenizer> open_run_tokenizer(
    const config::Config& config,
    const fs::path& run_dir) {
  if (auto own = run_tokenizer(run_dir)) {
    return own;
  }
  const fs::path data = config.data.dir;
  std::error_code ec;
  if (!fs::is_directory(data, ec)) {
    throw UserError(fmt::format(
        "{} holds no tokenizer ({} or {}: a run trained before runs kept theirs) and its "
        "data.dir {} is not found{}; set data.dir to the folder of the data it was trained on, "
        "or add the tokenizer to the run where that data is (docs/runs.md: a run's tokenizer)",
        run_dir.string(),
        kVocabFile,
        kPiecesFile,
        data.string(),
        data.is_relative() ? fmt::format(" (from {})", fs::current_path(ec).string()) : ""));
  }
  return formats::Tokenizer::load(data / config.data.vocab);
}

bool keep_tokenizer(const fs::path& run_dir, const formats::Tokenizer& tokenizer, bool replace) {
  const fs::path path = run_tokenizer_path(run_dir, tokenizer);
  std::error_code ec;
  if (fs::exists(path, ec) && !replace) {
    const auto kept = formats::Tokenizer::load(path);
    if (kept->fingerprint() != tokenizer.fingerprint()) {
      throw UserError(fmt::format(
          "{} holds the run's tokenizer ({}), and {} is another ({}): the run was trained "
          "with the first; give data.dir the data it was trained on",
          path.string(),
          kept->fingerprint(),
          tokenizer.file().string(),
          tokenizer.fingerprint()));
    }
    // The same ids, and the data's vocab.txt now records how raw text is split (xl-prep again).
    const bool rules_differ = kept->vocab() != nullptr &&
        kept->vocab()->tokenization() != tokenizer.vocab()->tokenization();
    if (!rules_differ) {
      return false;
    }
  }
  // A vocabulary as xl writes it (one read from Hugging Face's symbols too), a SentencePiece
  // model as it is.
  if (const auto* vocab = tokenizer.vocab()) {
    vocab->save(path);
  } else {
    atomic_write(path, read_file(tokenizer.file(), "tokenizer"));
  }
  return true;
}

} // namespace xl::infer
