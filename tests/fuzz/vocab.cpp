// Fuzz target: vocabulary files (formats::Vocab::load). An accepted vocabulary must map every
// token back to its id.
#include "xl/formats/vocab.h"
#include "fuzz_util.h"
#include "xl/util/files.h"

using namespace xl::fuzz;

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (const auto dir = seeds_dir()) {
    const fs::path text = work_dir() / "text.txt";
    xl::atomic_write(text, sample_text(20000));
    xl::formats::Vocab::build_word({text}).save(work_dir() / "word.txt");
    xl::formats::Vocab::build_word({text}, {"<eos>", "<unk>"}).save(work_dir() / "unk.txt");
    xl::formats::Vocab::build_byte({text}).save(work_dir() / "byte.txt");
    for (const char* name : {"word.txt", "unk.txt", "byte.txt"}) {
      write_seed(*dir, name, xl::read_file(work_dir() / name));
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path path = input_file(data, size, "vocab.txt");
  accepted_or_refused([&] {
    const auto vocab = xl::formats::Vocab::load(path);
    for (int64_t id = 0; id < vocab.size(); ++id) {
      require(vocab.index(vocab.token(id)) == id, "a token does not map back to its id");
    }
  });
  return 0;
}
