// Fuzz target: labelled text files, the classification data of XLNet fine-tuning
// (formats::read_labelled_texts). An accepted file has at least one example, one per line.
#include "fuzz_util.h"
#include "xl/formats/labelled_file.h"
#include "xl/util/files.h"

using namespace xl::fuzz;

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (const auto dir = seeds_dir()) {
    std::vector<xl::formats::LabelledText> examples;
    const std::string text = sample_text(4000);
    for (size_t at = 0, i = 0; at < text.size(); at += 200, ++i) {
      std::string line = text.substr(at, 200);
      for (char& c : line) {
        c = c == '\n' || c == '\t' ? ' ' : c;
      }
      examples.push_back({static_cast<int64_t>(i % 3), line});
    }
    xl::formats::write_labelled_texts(work_dir() / "seed.tsv", examples);
    write_seed(*dir, "seed.tsv", xl::read_file(work_dir() / "seed.tsv"));
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path path = input_file(data, size, "input.tsv");
  accepted_or_refused([&] {
    const auto examples = xl::formats::read_labelled_texts(path);
    require(!examples.empty(), "a file without examples is accepted");
    for (const auto& e : examples) {
      require(e.label >= 0, "a negative label is accepted");
      require(e.text.find('\n') == std::string::npos, "a text holds a line break");
    }
  });
  return 0;
}
