#include "xl/prep/sentencepiece_training.h"

#include <fmt/format.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>

#include "xl/formats/sentencepiece.h"
#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"

namespace xl::prep {

namespace {

// Control symbols take ids 3..7 in this order, the user symbols follow (data_utils and
// sp10m.cased.v3's training flags).
constexpr const char* kControlSymbols = "<cls>,<sep>,<pad>,<mask>,<eod>";
constexpr const char* kUserSymbols = "<eop>,.,(,),\",-,\xe2\x80\x93,\xc2\xa3,\xe2\x82\xac";
class LineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(std::vector<std::string> lines) : lines_(std::move(lines)) {}
  bool done() const override {
    return next_ >= lines_.size();
  }
  void Next() override {
    ++next_;
  }
  const std::string& value() const override {
    return lines_[next_];
  }
  sentencepiece::util::Status status() const override {
    return {};
  }

 private:
  std::vector<std::string> lines_;
  size_t next_ = 0;
};

} // namespace

void train_sentencepiece(
    const std::vector<std::filesystem::path>& files,
    const std::filesystem::path& model,
    const SentencePieceOptions& options) {
  // SentencePiece asserts these deep inside its trainer ("Internal: ..."); said here plainly.
  const auto listed = [](std::string_view list) {
    return static_cast<int64_t>(std::count(list.begin(), list.end(), ',')) + 1;
  };
  const int64_t specials = 3 + listed(kControlSymbols) + listed(kUserSymbols); // <unk> <s> </s>
  if (options.vocab_size <= specials) {
    throw UserError(fmt::format(
        "--vocab-size {}: expected more than the {} special pieces of XLNet's vocabulary",
        options.vocab_size,
        specials));
  }
  if (!(options.character_coverage > 0.0 && options.character_coverage <= 1.0)) {
    throw UserError(fmt::format(
        "--character-coverage {}: expected a fraction above 0, up to 1",
        options.character_coverage));
  }
  std::vector<std::string> lines;
  for (const auto& file : files) {
    const std::string text = formats::read_utf8_text(file, "corpus file");
    for (const auto line : formats::split_lines(text)) {
      std::string normalized = formats::normalize_text(line);
      if (!normalized.empty()) {
        lines.push_back(std::move(normalized));
      }
    }
  }
  if (lines.empty()) {
    throw UserError("no text to train SentencePiece on in " + files.front().string());
  }
  const std::unordered_map<std::string, std::string> args = {
      {"model_type", "unigram"},
      {"vocab_size", std::to_string(options.vocab_size)},
      {"character_coverage", fmt::format("{}", options.character_coverage)},
      {"control_symbols", kControlSymbols},
      {"user_defined_symbols", kUserSymbols},
      {"shuffle_input_sentence", "true"},
      // One thread: the EM sums would otherwise depend on how lines split over threads.
      {"num_threads", "1"},
      {"minloglevel", "1"}};
  sentencepiece::SetRandomGeneratorSeed(options.seed);
  LineIterator iterator(std::move(lines));
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(args, &iterator, &proto);
  if (!status.ok()) {
    throw UserError(fmt::format(
        "SentencePiece training on {} failed: {}", files.front().string(), status.ToString()));
  }
  atomic_write(model, proto);
}

} // namespace xl::prep
