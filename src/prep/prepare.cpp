#include "xl/prep/prepare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "xl/formats/sentence_tokens.h"
#include "xl/formats/sentencepiece.h"
#include "xl/formats/token_file.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

namespace xl::prep {

namespace {

// How the training text `train` is split, as --tokenization names it ("auto": told by WikiText's
// own tokens), said in the log.
formats::Tokenization training_tokenization(const std::string& name, std::string_view train) {
  const bool told = name == "auto";
  const auto tokenization = !told         ? formats::tokenization_named(name, "--tokenization")
      : formats::reads_as_wikitext(train) ? formats::Tokenization::kWikiText
                                          : formats::Tokenization::kNone;
  if (tokenization == formats::Tokenization::kWikiText) {
    logger().info(
        "tokenization: WikiText's{}; recorded in vocab.txt, so that a user's raw text is split "
        "by the same rules when it is scored (docs/runs.md)",
        told ? " (the training text holds its \" @-@ \", \" @,@ \" or \" @.@ \")" : "");
  }
  return tokenization;
}

formats::Vocab load_or_build_vocab(
    const PrepOptions& options,
    const std::map<std::string, std::string>& texts) {
  if (options.vocab) {
    formats::Vocab vocab = formats::Vocab::load(*options.vocab);
    if (vocab.kind() != options.kind) {
      throw UserError(
          "vocabulary " + options.vocab->string() + " is " + to_string(vocab.kind()) +
          "-level, but --format " + to_string(options.kind) + " was asked for");
    }
    return vocab;
  }
  std::vector<std::string_view> counted;
  for (const char* split : {"train", "valid", "test"}) {
    if (texts.count(split) != 0 && (options.vocab_from == "all" || counted.empty())) {
      counted.emplace_back(texts.at(split));
    }
  }
  if (options.kind == formats::VocabKind::kByte) {
    if (options.unk || options.min_freq > 1 || options.max_size) {
      throw UserError("--unk, --min-freq and --max-size are for word vocabularies (--format word)");
    }
    return formats::Vocab::build_byte_from(counted);
  }
  // Words left out must map somewhere.
  const bool unk = options.unk || options.min_freq > 1 || options.max_size;
  std::vector<std::string> specials{"<eos>"};
  if (unk) {
    specials.emplace_back("<unk>");
  }
  if (options.max_size && *options.max_size < static_cast<int64_t>(specials.size())) {
    throw UserError(fmt::format(
        "--max-size {} leaves no room for the special tokens ({})",
        *options.max_size,
        fmt::join(specials, " ")));
  }
  auto vocab =
      formats::Vocab::build_word_from(counted, specials, options.min_freq, options.max_size);
  vocab.set_tokenization(training_tokenization(options.tokenization, counted.front()));
  // A vocabulary of special tokens alone models nothing.
  if (vocab.size() == static_cast<int64_t>(specials.size())) {
    const bool words = vocab.size() > 0 &&
        formats::Vocab::build_word_from(counted, specials).size() >
            static_cast<int64_t>(specials.size());
    if (!words) {
      throw UserError(
          "the corpus holds no words, only blanks and line breaks: give a text of "
          "words");
    }
    throw UserError(
        options.min_freq > 1
            ? fmt::format(
                  "--min-freq {} leaves no word in the vocabulary: no word of the corpus appears "
                  "that often; lower it",
                  options.min_freq)
            : fmt::format(
                  "--max-size {} leaves no room for a word beside the special tokens; raise it",
                  options.max_size.value_or(0)));
  }
  return vocab;
}

} // namespace

PrepReport prepare_corpus(const PrepOptions& options) {
  if (!options.vocab && options.splits.count("train") == 0) {
    throw UserError(
        "xl-prep needs a training split (--train FILE) to build the vocabulary from, or a "
        "vocabulary to encode with (--vocab FILE)");
  }

  if (options.vocab_from != "train" && options.vocab_from != "all") {
    throw UserError("--vocab-from: expected train or all, found '" + options.vocab_from + "'");
  }
  // Each split read once (a pipe cannot be read again), then counted and encoded.
  std::map<std::string, std::string> texts;
  for (const auto& [name, path] : options.splits) {
    texts[name] = formats::read_corpus(path, options.kind);
  }
  const formats::Vocab vocab = load_or_build_vocab(options, texts);
  PrepReport report;
  report.vocab_size = vocab.size();
  logger().info("vocabulary: {} {} tokens", vocab.size(), to_string(vocab.kind()));
  // Encode everything before writing anything, so a bad split leaves the output
  // folder as it was.
  std::map<std::string, std::vector<int64_t>> encoded;
  // A vocabulary reused encodes a user's text: raw, under its rules, unless it is tokenized.
  const bool raw = options.vocab && !options.pretokenized &&
      vocab.tokenization() != formats::Tokenization::kNone;
  for (const auto& [name, path] : options.splits) {
    if (raw && formats::reads_as_wikitext(texts.at(name))) {
      logger().warn(
          "{} holds WikiText's own tokens (\" @-@ \", \" @,@ \"): it reads as tokenized already, "
          "and the rules for raw text of {} split those again; --pretokenized reads it as it "
          "stands",
          path.string(),
          options.vocab->string());
    }
    encoded[name] = vocab.encode(texts.at(name), path.string(), false, raw);
    texts.erase(name);
    report.tokens[name] = static_cast<int64_t>(encoded[name].size());
    logger().info("{}: {} tokens from {}", name, encoded[name].size(), path.string());
  }
  for (const auto& [name, ids] : encoded) {
    formats::write_token_file(options.out / (name + ".bin"), ids, vocab);
  }
  vocab.save(options.out / "vocab.txt");
  return report;
}

PrepReport prepare_xlnet_corpus(const XLNetPrepOptions& options) {
  const auto model_path = options.out / "spiece.model";
  if (options.model) {
    const formats::SentencePiece reused(*options.model); // refused under its own name
    atomic_copy(reused.path(), model_path, "SentencePiece model");
  } else if (options.splits.count("train") == 0) {
    throw UserError(
        "xl-prep needs a training split (--train FILE) to train SentencePiece "
        "on, or an existing model (--spm-model FILE)");
  } else {
    const auto& train = options.splits.at("train");
    std::error_code ec;
    if (std::filesystem::is_fifo(train, ec)) {
      throw UserError(fmt::format(
          "--train {} is a pipe: SentencePiece is trained on it and then it is encoded, two "
          "reads; give a regular file (or reuse a model with --spm-model)",
          train.string()));
    }
    train_sentencepiece({train}, model_path, options.sentencepiece);
  }
  const formats::SentencePiece model(model_path);
  PrepReport report;
  report.vocab_size = model.size();
  logger().info("SentencePiece model {}: {} pieces", model_path.string(), model.size());
  for (const auto& [name, path] : options.splits) {
    const auto tokens = formats::encode_raw_text(path, model);
    formats::write_sentence_tokens(options.out / (name + ".pieces"), tokens, model);
    report.tokens[name] = static_cast<int64_t>(tokens.ids.size());
    logger().info("{}: {} pieces from {}", name, tokens.ids.size(), path.string());
  }
  return report;
}

} // namespace xl::prep
