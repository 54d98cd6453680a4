// Fuzz target: token files (formats::TokenFile) against a fixed vocabulary. An accepted file must
// read back within the vocabulary, through at() and slice() alike.
#include <torch/torch.h>

#include "fuzz_util.h"
#include "xl/formats/token_file.h"
#include "xl/util/files.h"

using namespace xl::fuzz;

namespace {

const xl::formats::Vocab& vocab() {
  static const xl::formats::Vocab v = [] {
    const fs::path text = work_dir() / "text.txt";
    xl::atomic_write(text, sample_text(20000));
    return xl::formats::Vocab::build_word({text});
  }();
  return v;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  vocab();
  if (const auto dir = seeds_dir()) {
    const auto ids = vocab().encode_file(work_dir() / "text.txt");
    for (const size_t n : {size_t{0}, size_t{1}, size_t{100}, size_t{3000}}) {
      const fs::path path = work_dir() / ("seed" + std::to_string(n) + ".bin");
      xl::formats::write_token_file(
          path,
          std::vector<int64_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(n)),
          vocab());
      write_seed(*dir, path.filename().string(), xl::read_file(path));
    }
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path path = input_file(data, size, "tokens.bin");
  accepted_or_refused([&] {
    const xl::formats::TokenFile file(path, vocab(), "vocab.txt");
    const auto all = file.slice(0, file.size());
    require(all.numel() == file.size(), "slice() of the whole file has another size");
    for (int64_t i = 0; i < file.size(); ++i) {
      const int64_t id = file.at(i);
      require(id >= 0 && id < vocab().size(), "an accepted id is outside the vocabulary");
      require(all[i].item<int64_t>() == id, "at() and slice() disagree");
    }
  });
  return 0;
}
