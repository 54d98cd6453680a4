#include "xl/prep/sentencepiece_training.h"

#include <fmt/format.h>
#include <sentencepiece_trainer.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <regex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "xl/formats/sentencepiece.h"
#include "xl/formats/text.h"
#include "xl/util/error.h"
#include "xl/util/files.h"
#include "xl/util/log.h"

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

// SentencePiece's defaults: max_sentence_length (longer lines are dropped) and the least
// character_coverage its trainer accepts.
constexpr size_t kMaxLineBytes = 4192;
constexpr double kMinCoverage = 0.98;

// The vocabulary sizes SentencePiece finds out of range only after reading the corpus, said as
// the flags to change; any other failure keeps SentencePiece's text.
std::string training_failure(
    const std::string& status,
    const std::filesystem::path& file,
    const SentencePieceOptions& options) {
  std::smatch m;
  if (std::regex_search(status, m, std::regex(R"(smaller than required_chars\. \d+ vs (\d+))"))) {
    return fmt::format(
        "--vocab-size {}: the characters of {} at --character-coverage {} and XLNet's special "
        "pieces need at least {}; give a larger --vocab-size, or a lower coverage (from {})",
        options.vocab_size,
        file.string(),
        options.character_coverage,
        m[1].str(),
        kMinCoverage);
  }
  if (std::regex_search(
          status,
          m,
          std::regex(R"(Vocabulary size too high \(\d+\)\. Please set it to a value <= (\d+))"))) {
    return fmt::format(
        "--vocab-size {}: {} holds pieces for at most {}; give --vocab-size {} or less, or more "
        "text",
        options.vocab_size,
        file.string(),
        m[1].str(),
        m[1].str());
  }
  return fmt::format("SentencePiece training on {} failed: {}", file.string(), status);
}

// The normalised lines of `files` SentencePiece learns from: it would drop those longer than
// kMaxLineBytes itself, and a corpus of only such lines ended in its "Internal:" assertion.
std::vector<std::string> training_lines(const std::vector<std::filesystem::path>& files) {
  std::vector<std::string> lines;
  size_t too_long = 0;
  for (const auto& file : files) {
    const std::string text = formats::read_utf8_text(file, "corpus file");
    for (const auto line : formats::split_lines(text)) {
      std::string normalized = formats::normalize_text(line);
      if (normalized.size() > kMaxLineBytes) {
        ++too_long;
      } else if (!normalized.empty()) {
        lines.push_back(std::move(normalized));
      }
    }
  }
  if (lines.empty()) {
    throw UserError(fmt::format(
        "no text to train SentencePiece on in {}{}",
        files.front().string(),
        too_long == 0 ? std::string()
                      : fmt::format(
                            ": {} longer than SentencePiece's {} bytes; break the text into "
                            "sentences or paragraphs, one a line",
                            too_long == 1 ? std::string("its one line is")
                                          : fmt::format("its {} lines are each", too_long),
                            kMaxLineBytes)));
  }
  if (too_long > 0) {
    logger().warn(
        "SentencePiece learns from {} lines of {}; {} longer than its {} bytes are left out",
        lines.size(),
        files.front().string(),
        too_long,
        kMaxLineBytes);
  }
  return lines;
}

} // namespace

namespace {

// A line every `seconds` that long work still goes on, from a thread of its own, until it goes.
class Heartbeat {
 public:
  Heartbeat(double seconds, std::string what)
      : what_(std::move(what)), thread_([this, seconds] { beat(seconds); }) {}
  ~Heartbeat() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    done_changed_.notify_all();
    thread_.join();
  }
  Heartbeat(const Heartbeat&) = delete;
  Heartbeat& operator=(const Heartbeat&) = delete;

 private:
  void beat(double seconds) {
    const auto start = std::chrono::steady_clock::now();
    const auto period = std::chrono::duration<double>(seconds);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!done_changed_.wait_for(lock, period, [this] { return done_; })) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      logger().info("{}: {:.0f}s elapsed", what_, elapsed);
    }
  }

  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_changed_;
  bool done_ = false;
  std::thread thread_; // last: it starts once the others are made
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
  if (!(options.character_coverage >= kMinCoverage && options.character_coverage <= 1.0)) {
    throw UserError(fmt::format(
        "--character-coverage {}: expected a fraction from {} to 1 (SentencePiece's range)",
        options.character_coverage,
        kMinCoverage));
  }
  std::vector<std::string> lines = training_lines(files);
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
  logger().info(
      "training SentencePiece: a unigram model of {} pieces on {} lines",
      options.vocab_size,
      lines.size());
  LineIterator iterator(std::move(lines));
  std::string proto;
  sentencepiece::util::Status status;
  {
    const Heartbeat heartbeat(options.progress_seconds, "training SentencePiece");
    status = sentencepiece::SentencePieceTrainer::Train(args, &iterator, &proto);
  }
  if (!status.ok()) {
    throw UserError(training_failure(status.ToString(), files.front(), options));
  }
  atomic_write(model, proto);
}

} // namespace xl::prep
