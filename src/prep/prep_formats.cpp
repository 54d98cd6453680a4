#include "xl/prep/prep_formats.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "xl/prep/nsmc.h"
#include "xl/util/flag_checks.h"
#include "xl/util/log.h"

namespace xl::prep {

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
  const auto report = prepare_corpus(options);
  logger().info("vocabulary of {} tokens", report.vocab_size);
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
  const auto report = prepare_xlnet_corpus(xlnet);
  logger().info("SentencePiece model of {} pieces", report.vocab_size);
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
    const auto counts = convert_nsmc(
        path,
        dir / (name + ".txt"),
        dir / (name + ".tsv"),
        held,
        dir / "valid.txt",
        dir / "valid.tsv");
    if (held > 0) {
      logger().info("valid: the last {} training documents, held out", held);
    }
    logger().info(
        "{}: {} documents{} ({} sentences), {} empty ones left out",
        name,
        counts.documents - held,
        held > 0 ? fmt::format(" and {} held out", held) : "",
        counts.sentences,
        counts.empty);
  }
}

// How a word or byte vocabulary is counted, or which one encodes.
const PrepFlags kVocabulary{
    {"--vocab-from", "--vocab"},
    [](CLI::App& app, PrepRequest& request) {
      app.add_option(
             "--vocab-from",
             request.options.vocab_from,
             "count the vocabulary over 'train' only or 'all' splits, in the order train, "
             "valid, test (kimiyoung's and NVIDIA's order for WikiText)")
          ->check(CLI::IsMember({"train", "all"}));
      app.add_option(
          "--vocab", request.vocab, "encode with this existing vocab.txt instead of building");
    }};

// Which words a word vocabulary keeps.
const PrepFlags kWordVocabulary{
    {"--unk", "--min-freq", "--max-size", "--tokenization", "--pretokenized"},
    [](CLI::App& app, PrepRequest& request) {
      app.add_flag(
          "--unk",
          request.options.unk,
          "word: add <unk>, to which words outside the vocabulary map (implied by --min-freq "
          "and --max-size)");
      app.add_option(
             "--min-freq",
             request.options.min_freq,
             "word: leave out words seen fewer times (they map to <unk>)")
          ->check(count_from(0));
      app.add_option(
             "--max-size",
             request.options.max_size,
             "word: at most this many tokens, <eos> and <unk> included (the rarest map to "
             "<unk>)")
          ->check(count_from(1));
      app.add_option(
             "--tokenization",
             request.options.tokenization,
             "word: how the training text is split, recorded in vocab.txt so that a raw text "
             "is split the same way when scored: wikitext (WikiText's rules), none (blanks), or "
             "auto (wikitext where the text holds WikiText's \"@-@\", \"@,@\" or \"@.@\")")
          ->check(CLI::IsMember({"auto", "wikitext", "none"}));
      app.add_flag(
          "--pretokenized",
          request.options.pretokenized,
          "word, --vocab: the splits are tokenized already (split at blanks), not raw text "
          "split by the vocabulary's rules");
    }};

// SentencePiece's model and its training.
const PrepFlags kSentencePiece{
    {"--spm-model", "--vocab-size", "--character-coverage", "--progress-seconds"},
    [](CLI::App& app, PrepRequest& request) {
      app.add_option(
          "--spm-model",
          request.spm_model,
          "xlnet: encode with this SentencePiece model instead of training one");
      app.add_option(
          "--vocab-size",
          request.xlnet.sentencepiece.vocab_size,
          "xlnet: SentencePiece vocabulary size");
      app.add_option(
          "--character-coverage",
          request.xlnet.sentencepiece.character_coverage,
          "xlnet: the share of characters SentencePiece covers, from 0.98 to 1");
      app.add_option(
             "--progress-seconds",
             request.xlnet.sentencepiece.progress_seconds,
             "xlnet: a line that SentencePiece's training goes on at least this often")
          ->check(number_between(0.1, 86400.0));
    }};

// NSMC's validation split, held out of its training file.
const PrepFlags kHoldout{{"--holdout"}, [](CLI::App& app, PrepRequest& request) {
                           app.add_option(
                                  "--holdout",
                                  request.holdout,
                                  "nsmc: the last N training documents become the valid split")
                               ->check(count_from(0));
                         }};

} // namespace

const std::vector<PrepFormat>& prep_formats() {
  static const std::vector<PrepFormat> formats{
      {"word",
       "whitespace tokens + <eos> per line",
       {&kVocabulary, &kWordVocabulary},
       token_outputs,
       prepare_tokens},
      {"byte", "the bytes of the text", {&kVocabulary}, token_outputs, prepare_tokens},
      {"xlnet",
       "SentencePiece pieces with sentence boundaries",
       {&kSentencePiece},
       piece_outputs,
       prepare_pieces},
      {"nsmc",
       "NSMC tsv to a raw corpus <split>.txt and labelled <split>.tsv",
       {&kHoldout},
       nsmc_outputs,
       prepare_nsmc}};
  return formats;
}

std::vector<std::string> PrepFormat::flags() const {
  std::vector<std::string> names;
  for (const auto* set : flag_sets) {
    names.insert(names.end(), set->names.begin(), set->names.end());
  }
  return names;
}

std::vector<const PrepFlags*> prep_flag_sets() {
  std::vector<const PrepFlags*> sets;
  for (const auto& format : prep_formats()) {
    for (const auto* set : format.flag_sets) {
      if (std::find(sets.begin(), sets.end(), set) == sets.end()) {
        sets.push_back(set);
      }
    }
  }
  return sets;
}

} // namespace xl::prep
