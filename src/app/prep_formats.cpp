// The formats xl-prep writes, one entry each: the only place that lists them.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "xl/app/prep.h"
#include "xl/prep/nsmc.h"

namespace xl::app {

namespace {

// An encoded corpus: <split><extension> for each split, and the vocabulary file `vocabulary`
// unless the request reuses the one already in --out (`reused`: it is rewritten unchanged).
std::vector<std::string> encoded_outputs(
    const PrepRequest& request,
    const PrepSplits& splits,
    const std::string& extension,
    const std::string& reused,
    const std::string& vocabulary) {
  std::vector<std::string> files;
  for (const auto& [name, path] : splits) {
    files.push_back(name + extension);
  }
  std::error_code ec;
  if (reused.empty() ||
      !std::filesystem::equivalent(reused, std::filesystem::path(request.out) / vocabulary, ec)) {
    files.push_back(vocabulary);
  }
  return files;
}

// word and byte: <split>.bin token files and vocab.txt.
std::vector<std::string> token_outputs(const PrepRequest& request, const PrepSplits& splits) {
  return encoded_outputs(request, splits, ".bin", request.vocab, "vocab.txt");
}

void prepare_tokens(const PrepRequest& request, const PrepSplits& splits) {
  auto options = request.options;
  options.kind = request.format == "word" ? formats::VocabKind::kWord : formats::VocabKind::kByte;
  options.splits = splits;
  options.out = request.out;
  if (!request.vocab.empty()) {
    options.vocab = request.vocab;
  }
  const auto report = prep::prepare_corpus(options);
  spdlog::info("vocabulary of {} tokens", report.vocab_size);
}

// xlnet: <split>.pieces and spiece.model.
std::vector<std::string> piece_outputs(const PrepRequest& request, const PrepSplits& splits) {
  return encoded_outputs(request, splits, ".pieces", request.spm_model, "spiece.model");
}

void prepare_pieces(const PrepRequest& request, const PrepSplits& splits) {
  auto xlnet = request.xlnet;
  xlnet.splits = splits;
  xlnet.out = request.out;
  if (!request.spm_model.empty()) {
    xlnet.model = request.spm_model;
  }
  const auto report = prep::prepare_xlnet_corpus(xlnet);
  spdlog::info("SentencePiece model of {} pieces", report.vocab_size);
}

// nsmc: a raw corpus <split>.txt and labelled <split>.tsv per split (and valid's, held out).
std::vector<std::string> nsmc_outputs(const PrepRequest& request, const PrepSplits& splits) {
  std::vector<std::string> files;
  for (const auto& [name, path] : splits) {
    files.insert(files.end(), {name + ".txt", name + ".tsv"});
  }
  if (request.holdout > 0) {
    files.insert(files.end(), {"valid.txt", "valid.tsv"});
  }
  return files;
}

void prepare_nsmc(const PrepRequest& request, const PrepSplits& splits) {
  const std::filesystem::path dir = request.out;
  for (const auto& [name, path] : splits) {
    const int64_t held = name == "train" ? request.holdout : 0;
    const auto counts = prep::convert_nsmc(
        path,
        dir / (name + ".txt"),
        dir / (name + ".tsv"),
        held,
        dir / "valid.txt",
        dir / "valid.tsv");
    if (held > 0) {
      spdlog::info("valid: the last {} training documents, held out", held);
    }
    spdlog::info(
        "{}: {} documents{} ({} sentences), {} empty ones left out",
        name,
        counts.documents - held,
        held > 0 ? fmt::format(" and {} held out", held) : "",
        counts.sentences,
        counts.empty);
  }
}

} // namespace

const std::vector<PrepFormat>& prep_formats() {
  static const std::vector<PrepFormat> formats{
      {"word",
       "whitespace tokens + <eos> per line",
       {"--vocab-from", "--vocab", "--unk", "--min-freq", "--max-size"},
       token_outputs,
       prepare_tokens},
      {"byte", "the bytes of the text", {"--vocab-from", "--vocab"}, token_outputs, prepare_tokens},
      {"xlnet",
       "SentencePiece pieces with sentence boundaries",
       {"--spm-model", "--vocab-size", "--character-coverage", "--progress-seconds"},
       piece_outputs,
       prepare_pieces},
      {"nsmc",
       "NSMC tsv to a raw corpus <split>.txt and labelled <split>.tsv",
       {"--holdout"},
       nsmc_outputs,
       prepare_nsmc}};
  return formats;
}

} // namespace xl::app
