#include "xl/prep/prep_formats.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "xl/prep/nsmc.h"
#include "xl/prep/prepare.h"
#include "xl/util/error.h"
#include "xl/util/log.h"

namespace xl::prep {

std::string PrepRequest::text(const std::string& flag, const std::string& otherwise) const {
  const auto it = values.find(flag);
  return it == values.end() ? otherwise : it->second;
}

int64_t PrepRequest::count(const std::string& flag, int64_t otherwise) const {
  const auto it = values.find(flag);
  if (it == values.end()) {
    return otherwise;
  }
  const std::string& value = it->second;
  int64_t n = 0;
  const auto [stop, error] = std::from_chars(value.data(), value.data() + value.size(), n);
  if (value.empty() || error != std::errc() || stop != value.data() + value.size()) {
    throw UserError(fmt::format("{} {}: expected an integer", flag, value));
  }
  return n;
}

double PrepRequest::number(const std::string& flag, double otherwise) const {
  const auto it = values.find(flag);
  if (it == values.end()) {
    return otherwise;
  }
  char* end = nullptr;
  const double x = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || end != it->second.c_str() + it->second.size() || !std::isfinite(x)) {
    throw UserError(fmt::format("{} {}: expected a number", flag, it->second));
  }
  return x;
}

bool PrepRequest::on(const std::string& flag) const {
  return values.count(flag) > 0;
}

bool PrepFormat::takes(const PrepFlag& flag) const {
  return std::find(flag.formats.begin(), flag.formats.end(), name) != flag.formats.end();
}

namespace {

// An encoded corpus: <split><extension> for each split, and the vocabulary file `vocabulary`
// unless the request reuses the one already in --out (the flag `reuse` names it: it is rewritten
// unchanged).
std::vector<std::string> encoded_outputs(
    const PrepRequest& request,
    const PrepSplits& splits,
    const std::string& extension,
    const std::string& reuse,
    const std::string& vocabulary) {
  std::vector<std::string> files;
  for (const auto& [name, path] : splits) {
    files.push_back(name + extension);
  }
  const std::string reused = request.text(reuse);
  std::error_code ec;
  if (reused.empty() ||
      !std::filesystem::equivalent(reused, std::filesystem::path(request.out) / vocabulary, ec)) {
    files.push_back(vocabulary);
  }
  return files;
}

// word and byte: <split>.bin token files and vocab.txt.
std::vector<std::string> token_outputs(const PrepRequest& request, const PrepSplits& splits) {
  return encoded_outputs(request, splits, ".bin", "--vocab", "vocab.txt");
}

void prepare_tokens(const PrepRequest& request, const PrepSplits& splits) {
  PrepOptions options;
  options.kind = request.format == "byte" ? formats::VocabKind::kByte : formats::VocabKind::kWord;
  options.splits = splits;
  options.out = request.out;
  options.vocab_from = request.text("--vocab-from", options.vocab_from);
  options.unk = request.on("--unk");
  options.min_freq = request.count("--min-freq", options.min_freq);
  if (request.on("--max-size")) {
    options.max_size = request.count("--max-size", 0);
  }
  options.tokenization = request.text("--tokenization", options.tokenization);
  options.pretokenized = request.on("--pretokenized");
  if (request.on("--vocab")) {
    options.vocab = request.text("--vocab");
  }
  prepare_corpus(options);
}

// pieces: <split>.pieces and spiece.model.
std::vector<std::string> piece_outputs(const PrepRequest& request, const PrepSplits& splits) {
  return encoded_outputs(request, splits, ".pieces", "--spm-model", "spiece.model");
}

void prepare_pieces(const PrepRequest& request, const PrepSplits& splits) {
  XLNetPrepOptions options;
  options.splits = splits;
  options.out = request.out;
  auto& sentencepiece = options.sentencepiece;
  sentencepiece.vocab_size = request.count("--vocab-size", sentencepiece.vocab_size);
  sentencepiece.character_coverage =
      request.number("--character-coverage", sentencepiece.character_coverage);
  sentencepiece.progress_seconds =
      request.number("--progress-seconds", sentencepiece.progress_seconds);
  if (request.on("--spm-model")) {
    options.model = request.text("--spm-model");
  }
  prepare_xlnet_corpus(options);
}

// nsmc: a raw corpus <split>.txt and labelled <split>.tsv per split (and valid's, held out).
std::vector<std::string> nsmc_outputs(const PrepRequest& request, const PrepSplits& splits) {
  std::vector<std::string> files;
  for (const auto& [name, path] : splits) {
    files.insert(files.end(), {name + ".txt", name + ".tsv"});
  }
  if (request.count("--holdout", 0) > 0) {
    files.insert(files.end(), {"valid.txt", "valid.tsv"});
  }
  return files;
}

void prepare_nsmc(const PrepRequest& request, const PrepSplits& splits) {
  const std::filesystem::path dir = request.out;
  for (const auto& [name, path] : splits) {
    const int64_t held = name == "train" ? request.count("--holdout", 0) : 0;
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

using Value = PrepFlag::Value;

// A flag described, a part at a time.
class Described {
 public:
  Described(std::string name, std::vector<std::string> formats, Value value, std::string help) {
    flag_.name = std::move(name);
    flag_.formats = std::move(formats);
    flag_.value = value;
    flag_.help = std::move(help);
  }
  Described& shown(std::string value) {
    flag_.default_value = std::move(value);
    return *this;
  }
  Described& choices(std::vector<std::string> values) {
    flag_.choices = std::move(values);
    return *this;
  }
  Described& range(double low, double high) {
    flag_.low = low;
    flag_.high = high;
    return *this;
  }
  Described& needs(std::string other, std::string why) {
    flag_.rules.push_back({true, std::move(other), std::move(why)});
    return *this;
  }
  Described& excludes(std::string other, std::string why) {
    flag_.rules.push_back({false, std::move(other), std::move(why)});
    return *this;
  }
  operator PrepFlag() const {
    return flag_;
  } // NOLINT(google-explicit-constructor)

 private:
  PrepFlag flag_;
};

// How a word or byte vocabulary is counted, or which one encodes; which words a word vocabulary
// keeps and how its text is split.
std::vector<PrepFlag> vocabulary_flags() {
  const PrepOptions defaults;
  const char* const built = "they build a vocabulary, --vocab reuses one";
  return {
      Described(
          "--vocab-from",
          {"word", "byte"},
          Value::kText,
          "count the vocabulary over 'train' only or 'all' splits, in the order train, valid, "
          "test (kimiyoung's and NVIDIA's order for WikiText)")
          .shown(defaults.vocab_from)
          .choices({"train", "all"})
          .excludes("--vocab", built),
      Described(
          "--vocab",
          {"word", "byte"},
          Value::kFile,
          "encode with this existing vocab.txt instead of building one"),
      Described(
          "--unk",
          {"word"},
          Value::kSwitch,
          "add <unk>, to which words outside the vocabulary map (implied by --min-freq and "
          "--max-size)")
          .excludes("--vocab", built),
      Described(
          "--min-freq",
          {"word"},
          Value::kCount,
          "leave out words seen fewer times (they map to <unk>)")
          .shown(std::to_string(defaults.min_freq))
          .excludes("--vocab", built),
      Described(
          "--max-size",
          {"word"},
          Value::kCount,
          "at most this many tokens, <eos> and <unk> included (the rarest map to <unk>)")
          .range(1, 0)
          .excludes("--vocab", built),
      Described(
          "--tokenization",
          {"word"},
          Value::kText,
          "how the training text is split, recorded in vocab.txt so that a raw text is split "
          "the same way when scored: wikitext (WikiText's rules), none (blanks), or auto "
          "(wikitext where the text holds WikiText's \"@-@\", \"@,@\" or \"@.@\")")
          .shown(defaults.tokenization)
          .choices({"auto", "wikitext", "none"})
          .excludes("--vocab", "--vocab's vocabulary records its own"),
      Described(
          "--pretokenized",
          {"word"},
          Value::kSwitch,
          "with --vocab: the splits are tokenized already (split at blanks), not raw text split "
          "by the vocabulary's rules")
          .needs("--vocab", "a vocabulary built here reads its splits as they stand")};
}

// SentencePiece's model and its training; NSMC's validation split, held out of its training file.
std::vector<PrepFlag> piece_and_review_flags() {
  const SentencePieceOptions defaults;
  const char* const trained = "they train a SentencePiece model, --spm-model reuses one";
  return {
      Described(
          "--spm-model",
          {"pieces"},
          Value::kFile,
          "encode with this SentencePiece model instead of training one"),
      Described("--vocab-size", {"pieces"}, Value::kCount, "SentencePiece vocabulary size")
          .shown(std::to_string(defaults.vocab_size))
          .excludes("--spm-model", trained),
      Described(
          "--character-coverage",
          {"pieces"},
          Value::kNumber,
          "the share of characters SentencePiece covers, from 0.98 to 1")
          .shown(fmt::format("{}", defaults.character_coverage))
          .excludes("--spm-model", trained),
      Described(
          "--progress-seconds",
          {"pieces"},
          Value::kNumber,
          "a line that SentencePiece's training goes on at least this often")
          .shown(fmt::format("{}", defaults.progress_seconds))
          .range(0.1, 86400.0)
          .excludes("--spm-model", trained),
      Described(
          "--holdout",
          {"nsmc"},
          Value::kCount,
          "the last N training documents become the valid split")
          .shown("0")
          .excludes(
              "--valid", "--holdout makes the valid split of training reviews, --valid gives one")
          .needs("--train", "it carves the valid split out of --train FILE")};
}

} // namespace

const std::vector<PrepFormat>& prep_formats() {
  static const std::vector<PrepFormat> formats{
      {"word", "", "whitespace tokens + <eos> per line", token_outputs, prepare_tokens},
      {"byte", "", "the bytes of the text", token_outputs, prepare_tokens},
      {"pieces",
       "xlnet",
       "SentencePiece pieces with sentence boundaries, XLNet's",
       piece_outputs,
       prepare_pieces},
      {"nsmc",
       "",
       "NSMC tsv to a raw corpus <split>.txt and labelled <split>.tsv",
       nsmc_outputs,
       prepare_nsmc}};
  return formats;
}

const std::vector<PrepFlag>& prep_flags() {
  static const std::vector<PrepFlag> flags = [] {
    auto all = vocabulary_flags();
    auto more = piece_and_review_flags();
    all.insert(all.end(), more.begin(), more.end());
    return all;
  }();
  return flags;
}

const PrepFormat& prep_format(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& format : prep_formats()) {
    if (format.name == name) {
      return format;
    }
    if (!format.former_name.empty() && format.former_name == name) {
      logger().info(
          "--format {} is now called --format {} (the old name is taken for a while)",
          name,
          format.name);
      return format;
    }
    names.push_back(format.name);
  }
  throw UserError(
      fmt::format("--format {}: no such format (one of {})", name, fmt::join(names, ", ")));
}

} // namespace xl::prep
