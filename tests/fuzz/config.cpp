// Fuzz target: a YAML config through the strict schema (config::load). An accepted config must
// round-trip: dump() of it loads back to the same dump. An input starting with "set:" is a
// --set override (its first line) over a valid config instead.
#include <fstream>
#include <iterator>

#include "fuzz_util.h"
#include "xl/config/config.h"

namespace {

using namespace xl::fuzz;

constexpr const char* kBase = R"(model:
  type: transformer_xl
  n_layer: 2
  n_head: 2
  d_model: 32
  d_head: 16
  d_inner: 64
data:
  dir: data
train:
  max_step: 10
)";

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void round_trips(const xl::config::Config& config) {
  const std::string dumped = xl::config::dump(config);
  const fs::path again = work_dir() / "dumped.yaml";
  std::ofstream(again, std::ios::binary) << dumped;
  xl::config::Config reloaded;
  try {
    reloaded = xl::config::load(again.string());
  } catch (const xl::UserError& e) {
    require(false, std::string("an accepted config's dump is refused: ") + e.what());
  }
  require(xl::config::dump(reloaded) == dumped, "an accepted config's dump loads to another");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  std::ofstream(work_dir() / "base.yaml") << kBase;
  if (const auto dir = seeds_dir()) {
    write_seed(*dir, "base.yaml", kBase);
    write_seed(*dir, "set-cutoffs", "set:model.transformer_xl.cutoffs=[20, 40]");
    write_seed(*dir, "set-mapping", "set:model={n_layer: 3, d_inner: 48}");
    write_seed(*dir, "set-null", "set:model.transformer_xl.d_embed=null");
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  accepted_or_refused([&] {
    if (text.rfind("set:", 0) == 0) {
      const std::string set = text.substr(4, text.find('\n') - 4);
      round_trips(xl::config::load((work_dir() / "base.yaml").string(), {set}));
      return;
    }
    const fs::path path = input_file(data, size, "input.yaml");
    require(read(path) == text, "input file not written");
    round_trips(xl::config::load(path.string()));
  });
  return 0;
}
