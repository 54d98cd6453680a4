// Fuzz target: XLNet's piece files (formats::read_sentence_tokens) against a fixed SentencePiece
// model trained at start-up. An accepted file must hold ids within the model and one sentence
// id (0 or 1) per token.
#include "fuzz_util.h"
#include "xl/formats/sentence_tokens.h"
#include "xl/prep/sentencepiece_training.h"
#include "xl/util/files.h"

using namespace xl::fuzz;

namespace {

fs::path train_model() {
  const fs::path text = work_dir() / "text.txt";
  xl::atomic_write(text, sample_text(100000));
  xl::prep::SentencePieceOptions o;
  o.vocab_size = 400;
  xl::prep::train_sentencepiece({text}, work_dir() / "m.model", o);
  return work_dir() / "m.model";
}

const xl::formats::SentencePiece& model() {
  static const xl::formats::SentencePiece m(train_model());
  return m;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  model();
  if (const auto dir = seeds_dir()) {
    const std::string text = sample_text(100000);
    for (const size_t n : {size_t{200}, size_t{5000}}) {
      xl::atomic_write(work_dir() / "raw.txt", text.substr(0, n));
      const fs::path path = work_dir() / ("seed" + std::to_string(n) + ".pieces");
      xl::formats::write_sentence_tokens(
          path, xl::formats::encode_raw_text(work_dir() / "raw.txt", model()), model());
      write_seed(*dir, path.filename().string(), xl::read_file(path));
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path path = input_file(data, size, "input.pieces");
  accepted_or_refused([&] {
    const auto tokens = xl::formats::read_sentence_tokens(path, model());
    require(tokens.ids.size() == tokens.sent_ids.size(), "ids and sentence ids differ");
    for (size_t i = 0; i < tokens.ids.size(); ++i) {
      require(
          tokens.ids[i] >= 0 && tokens.ids[i] < model().size(),
          "an accepted id is outside the model");
      require(tokens.sent_ids[i] <= 1, "a sentence id is not 0 or 1");
    }
  });
  return 0;
}
