#include "xl/app/prep.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>
#include <vector>

#include "xl/prep/nsmc.h"
#include "xl/run/logging.h"
#include "xl/run/outputs.h"
#include "xl/util/error.h"

namespace xl::app {

namespace {

using Splits = std::map<std::string, std::filesystem::path>;

// A flag of another format would be ignored: refused, all alike.
void check_flags(const PrepRequest& request) {
  const std::vector<std::string> words{"word"};
  const std::vector<std::string> token_files{"word", "byte"};
  const std::vector<std::string> pieces{"xlnet"};
  for (const auto& [flag, formats] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"--vocab-from", token_files},
           {"--vocab", token_files},
           {"--unk", words},
           {"--min-freq", words},
           {"--max-size", words},
           {"--spm-model", pieces},
           {"--vocab-size", pieces},
           {"--character-coverage", pieces},
           {"--holdout", {"nsmc"}}}) {
    if (request.given.count(flag) > 0 &&
        std::find(formats.begin(), formats.end(), request.format) == formats.end()) {
      throw UserError(fmt::format(
          "{} applies to --format {} only, not to --format {}",
          flag,
          fmt::join(formats, " or "),
          request.format));
    }
  }
  for (const auto& [flag, value] :
       {std::pair{"--spm-model", &request.spm_model}, std::pair{"--vocab", &request.vocab}}) {
    if (request.given.count(flag) > 0 && value->empty()) {
      throw UserError(fmt::format(
          "{} '': name the file to reuse, or leave the flag out to build a new one", flag));
    }
  }
  // Flags of the step a reused model or a given split skips would be ignored.
  for (const auto& [flag, instead] :
       {std::pair{"--vocab-size", "--spm-model"},
        std::pair{"--character-coverage", "--spm-model"},
        std::pair{"--holdout", "--valid"}}) {
    if (request.given.count(flag) > 0 && request.given.count(instead) > 0) {
      throw UserError(fmt::format(
          "{} and {} exclude each other: {}",
          flag,
          instead,
          std::string(instead) == "--valid"
              ? "--holdout makes the valid split of training reviews, --valid gives one"
              : "they train a SentencePiece model, --spm-model reuses one"));
    }
  }
}

// Every file it will write is checked before anything is read: the folder may hold other
// formats' files (nsmc's .txt beside xlnet's .pieces), never one it replaces unasked. A
// vocabulary reused from the folder itself is rewritten unchanged.
void prepare_outputs(const PrepRequest& request, const Splits& splits) {
  run::check_output_folder("--out", request.out, true);
  const std::filesystem::path folder(request.out);
  const bool nsmc = request.format == "nsmc";
  const bool xlnet = request.format == "xlnet";
  std::vector<std::string> files;
  for (const auto& [name, path] : splits) {
    if (nsmc) {
      files.insert(files.end(), {name + ".txt", name + ".tsv"});
    } else {
      files.push_back(name + (xlnet ? ".pieces" : ".bin"));
    }
  }
  if (nsmc && request.holdout > 0) {
    files.insert(files.end(), {"valid.txt", "valid.tsv"});
  }
  const auto reused = xlnet ? request.spm_model : request.vocab;
  const std::string vocabulary = xlnet ? "spiece.model" : "vocab.txt";
  std::error_code ec;
  if (!nsmc && (reused.empty() || !std::filesystem::equivalent(reused, folder / vocabulary, ec))) {
    files.push_back(vocabulary);
  }
  for (const auto& file : files) {
    run::check_output_file("--out", (folder / file).string(), request.force);
  }
  run::create_output_folder("--out", folder);
}

// NSMC's tsv: a raw corpus <split>.txt and labelled <split>.tsv per split.
void convert_nsmc_splits(const PrepRequest& request, const Splits& splits) {
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

int run_prep(const PrepRequest& request) {
  check_flags(request);
  run::setup_logging("info");
  Splits splits;
  for (const auto& [name, path] :
       {std::pair{"train", request.train}, {"valid", request.valid}, {"test", request.test}}) {
    if (!path.empty()) {
      splits[name] = path;
    }
  }
  prepare_outputs(request, splits);
  if (request.format == "nsmc") {
    convert_nsmc_splits(request, splits);
    return 0;
  }
  if (request.format == "xlnet") {
    auto xlnet = request.xlnet;
    xlnet.splits = splits;
    xlnet.out = request.out;
    if (!request.spm_model.empty()) {
      xlnet.model = request.spm_model;
    }
    const auto report = prep::prepare_xlnet_corpus(xlnet);
    spdlog::info("wrote {} (SentencePiece {} pieces)", request.out, report.vocab_size);
    return 0;
  }
  auto options = request.options;
  options.kind = request.format == "word" ? formats::VocabKind::kWord : formats::VocabKind::kByte;
  options.splits = splits;
  options.out = request.out;
  if (!request.vocab.empty()) {
    options.vocab = request.vocab;
  }
  const auto report = prep::prepare_corpus(options);
  spdlog::info("wrote {} (vocabulary {} tokens)", request.out, report.vocab_size);
  return 0;
}

} // namespace xl::app
