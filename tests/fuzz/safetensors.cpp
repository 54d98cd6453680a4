// Fuzz target: safetensors files (io::SafeTensors::load). Every tensor of an accepted file must
// be readable whole.
#include <torch/torch.h>

#include "fuzz_util.h"
#include "xl/io/safetensors.h"
#include "xl/util/files.h"

using namespace xl::fuzz;

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  if (const auto dir = seeds_dir()) {
    torch::manual_seed(0);
    const fs::path path = work_dir() / "seed.safetensors";
    xl::io::save_safetensors(
        path,
        {{"word_emb.weight", torch::randn({7, 4})},
         {"ids", torch::arange(5, torch::kLong)},
         {"mask", torch::tensor({true, false, true})},
         {"half", torch::randn({2, 3}).to(torch::kBFloat16)},
         {"scalar", torch::tensor(1.5)}},
        {{"format", "pt"}, {"batches", "1"}});
    write_seed(*dir, "seed.safetensors", xl::read_file(path));
    xl::io::save_safetensors(path, {});
    write_seed(*dir, "empty.safetensors", xl::read_file(path));
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fs::path path = input_file(data, size, "input.safetensors");
  accepted_or_refused([&] {
    const auto file = xl::io::SafeTensors::load(path);
    for (const auto& name : file.names()) {
      const auto& t = file.at(name);
      require(t.defined() && t.is_contiguous(), "an accepted tensor is not whole");
      (void)t.to(torch::kDouble).sum().item<double>();
    }
  });
  return 0;
}
