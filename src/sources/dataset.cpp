#include "xl/sources/dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "xl/config/config.h"
#include "xl/formats/sentence_tokens.h"
#include "xl/formats/text_tokens.h"
#include "xl/formats/token_file.h"
#include "xl/sources/corpus.h"
#include "xl/sources/ordered_segments.h"
#include "xl/sources/sources.h"
#include "xl/sources/windows.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/scratch_file.h"

namespace xl::sources {

std::string Dataset::vocabulary_fingerprint() const {
  return tokenizer() ? tokenizer()->fingerprint() : "";
}

std::filesystem::path Dataset::vocabulary_file() const {
  return tokenizer() ? tokenizer()->file() : std::filesystem::path();
}

const formats::Vocab& Dataset::text_vocab() const {
  if (tokenizer() == nullptr) {
    throw UserError(
        "this data (random) has no word or byte vocabulary to encode and decode text with");
  }
  return tokenizer()->word_vocab("encoding and decoding text word by word or byte by byte");
}

EvalBatches Dataset::document_batches(
    const std::vector<const formats::Tokens*>& /*documents*/) const {
  return {};
}

EvalBatches row_batches(
    const config::Config& config,
    const std::vector<const formats::Tokens*>& documents,
    RowLayout layout) {
  std::vector<TokenRow> rows;
  rows.reserve(documents.size());
  for (const formats::Tokens* tokens : documents) {
    rows.push_back({tokens, 0, tokens->size()});
  }
  const int64_t tgt_len = config.eval.tgt_len.value_or(config.train.tgt_len);
  EvalBatches batches;
  batches.source = std::make_unique<RowSegments>(std::move(rows), tgt_len, layout, "documents");
  batches.setting = fmt::format("tgt_len {}, {} documents side by side", tgt_len, documents.size());
  batches.streams = static_cast<int64_t>(documents.size());
  return batches;
}

std::unique_ptr<BatchSource> Dataset::example_batches(
    const std::vector<formats::LabelledText>& /*examples*/,
    const std::string& name) const {
  throw UserError(fmt::format(
      "{}: this data ({}) is no classifier's labelled texts",
      name,
      vocabulary_fingerprint().empty() ? "random" : vocabulary_fingerprint()));
}

void refuse_encoded_file(const std::filesystem::path& file, const formats::Tokenizer& tokenizer) {
  const bool token_file = formats::looks_like_token_file(file);
  if (!token_file && !formats::looks_like_pieces_file(file)) {
    return;
  }
  const bool pieces = tokenizer.pieces() != nullptr;
  throw UserError(fmt::format(
      "{} is a {} that xl-prep wrote, not text, and this run reads {} ({}): give it the text, or "
      "a {} made with its {} (xl-prep --format {} --{} {} --test TEXT --out FOLDER)",
      file.string(),
      token_file ? "token file (word or byte ids)" : "pieces file (SentencePiece ids)",
      pieces ? "SentencePiece pieces" : "the words or bytes of its vocabulary",
      tokenizer.file().string(),
      pieces ? "pieces file" : "token file",
      pieces ? "model" : "vocabulary",
      pieces ? "xlnet" : (tokenizer.unit() == formats::VocabKind::kByte ? "byte" : "word"),
      pieces ? "spm-model" : "vocab",
      tokenizer.file().string()));
}

std::shared_ptr<const formats::Tokens> read_user_text(
    const UserText& text,
    const formats::Tokenizer& tokenizer,
    TextReading& reading) {
  reading.unit = tokenizer.pieces() != nullptr        ? "pieces"
      : tokenizer.unit() == formats::VocabKind::kByte ? "bytes"
                                                      : "words";
  if (tokenizer.vocab() != nullptr && text.file && formats::looks_like_token_file(*text.file)) {
    auto file = std::make_shared<const formats::TokenFile>(
        *text.file, *tokenizer.vocab(), tokenizer.file());
    reading.unit = "tokens";
    reading.count.units = file->size();
    return file;
  }
  if (tokenizer.pieces() != nullptr && text.file && formats::looks_like_pieces_file(*text.file)) {
    const auto encoded = formats::read_sentence_tokens(*text.file, *tokenizer.pieces());
    reading.unit = "tokens";
    reading.count.units = static_cast<int64_t>(encoded.ids.size());
    reading.count.unknown = std::count(encoded.ids.begin(), encoded.ids.end(), formats::kUnkId);
    reading.unknown_as = "<unk>";
    return std::make_shared<const formats::TokenTensor>(
        torch::tensor(encoded.ids, torch::kInt64), text.file->string());
  }
  if (text.file) {
    refuse_encoded_file(*text.file, tokenizer);
  }
  auto tokens = text.file
      ? std::make_shared<const formats::TextTokens>(
            *text.file, tokenizer, scratch_dir(), text.options)
      : std::make_shared<const formats::TextTokens>(text.text, text.name, tokenizer, text.options);
  reading.count = tokens->unknown();
  if (const auto* vocab = tokenizer.vocab(); vocab != nullptr &&
      vocab->tokenization() != formats::Tokenization::kNone && !text.options.pretokenized) {
    reading.rules = formats::to_string(vocab->tokenization());
  }
  reading.unknown_as =
      tokenizer.vocab() == nullptr || tokenizer.vocab()->has_unknown_token() ? "<unk>" : "left out";
  return tokens;
}

EvalBatches over_tokens(
    std::unique_ptr<BatchSource> source,
    std::string setting,
    const formats::Tokens& tokens) {
  EvalBatches batches;
  batches.source = std::move(source);
  batches.setting = std::move(setting);
  batches.tokens = &tokens;
  return batches;
}

EvalBatches token_eval_batches(
    const config::Config& c,
    const formats::Tokens& tokens,
    bool validation,
    int64_t ext_len,
    bool lead) {
  if (validation || c.eval.mode == config::EvalMode::kMemory) {
    const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
    return over_tokens(
        std::make_unique<OrderedSegments>(tokens, c.eval.batch_size, tgt_len, ext_len),
        fmt::format("tgt_len {}, batch {}", tgt_len, c.eval.batch_size),
        tokens);
  }
  const int64_t window = c.train.tgt_len;
  const int64_t stride = c.eval.stride;
  return over_tokens(
      std::make_unique<SlidingWindows>(tokens, window, stride, c.eval.batch_size, lead),
      fmt::format(
          "vanilla: window {}, {} scored, slide {}, {} windows per batch; {}",
          window,
          stride == 1 ? std::string("last position") : fmt::format("last {} positions", stride),
          stride,
          c.eval.batch_size,
          lead ? fmt::format(
                     "the targets before token {} are scored with the tokens before them (less "
                     "context than a window)",
                     window)
               : fmt::format(
                     "the first {} tokens are context only (every scored position sees a full "
                     "window)",
                     window)),
      tokens);
}

EvalBatches text_eval_batches(
    const config::Config& c,
    const formats::Tokens& tokens,
    int64_t ext_len,
    int64_t streams_asked,
    std::string& fitted) {
  const int64_t n = tokens.size();
  if (n < 2) {
    throw UserError(fmt::format(
        "{} holds {} token{}: a language model scores a text of at least 2 (the first is "
        "context only)",
        tokens.name(),
        n,
        n == 1 ? "" : "s"));
  }
  fitted.clear();
  if (c.eval.mode == config::EvalMode::kVanilla) {
    if (n <= c.train.tgt_len) {
      fitted = fmt::format(
          "{} holds {} tokens, no more than one window of {}: scored as one window of its first "
          "{}, each target with the tokens before it",
          tokens.name(),
          n,
          c.train.tgt_len,
          n - 1);
    }
    return token_eval_batches(c, tokens, false, ext_len, true);
  }
  const int64_t tgt_len = c.eval.tgt_len.value_or(c.train.tgt_len);
  // Each stream holds at least one segment and the token after it, where the text allows.
  const int64_t streams = std::clamp<int64_t>(n / (tgt_len + 1), 1, streams_asked);
  if (streams < streams_asked) {
    fitted = n - 1 <= tgt_len
        ? fmt::format(
              "{} holds {} tokens, no more than one segment of {} (eval.tgt_len) and the token "
              "after it: scored as one stream of {} targets",
              tokens.name(),
              n,
              tgt_len,
              n - 1)
        : fmt::format(
              "{} holds {} tokens, too few for {} streams of a segment of {} (eval.tgt_len) "
              "each: scored as {} stream{}",
              tokens.name(),
              n,
              streams_asked,
              tgt_len,
              streams,
              streams == 1 ? "" : "s");
  }
  auto batches = over_tokens(
      std::make_unique<OrderedSegments>(tokens, streams, tgt_len, ext_len),
      fmt::format("tgt_len {}, {} stream{}", tgt_len, streams, streams == 1 ? "" : "s"),
      tokens);
  batches.streams = streams;
  return batches;
}

const std::string& split_file(const config::DataConfig& d, const std::string& split) {
  if (split == "train") {
    return d.train;
  }
  return split == "valid" ? d.valid : d.test;
}

namespace {

// The folders scripts/getdata.sh prepares (data/prepared/<folder>), by the name it takes.
std::string getdata_name(const std::filesystem::path& dir) {
  static const std::map<std::string, std::string> kCorpora{
      {"wikitext-2", "wikitext-2"},
      {"wikitext-103", "wt103"},
      {"enwik8", "enwik8"},
      {"text8", "text8"},
      {"enwik8-prefix", "enwik8-prefix"},
      {"nsmc", "nsmc"},
      {"nsmc_8k", "nsmc"}};
  const auto name = dir.lexically_normal().filename().string();
  const auto it =
      kCorpora.find(name.empty() ? dir.lexically_normal().parent_path().filename().string() : name);
  return it == kCorpora.end() ? "" : it->second;
}

} // namespace

void check_data_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec)) {
    throw UserError(fmt::format(
        "data.dir {} is a file, expected the folder xl-prep wrote (data.dir names the folder "
        "of train.bin, valid.bin, ..., not one file)",
        dir.string()));
  }
  if (!std::filesystem::is_directory(dir, ec)) {
    const std::string corpus = getdata_name(dir);
    throw UserError(fmt::format(
        "data.dir not found: {}{}; prepare it with {} or set data.dir",
        dir.string(),
        dir.is_relative() ? fmt::format(
                                " (a relative data.dir is taken from the current "
                                "directory, {}, not from the config file's)",
                                std::filesystem::current_path().string())
                          : "",
        corpus.empty() ? std::string("xl-prep (README: Train, evaluate, ablate)")
                       : fmt::format(
                             "scripts/getdata.sh {} (from the repository's root; offline, it "
                             "prints the xl-prep command for files at hand)",
                             corpus)));
  }
}

} // namespace xl::sources
