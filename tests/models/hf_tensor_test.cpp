// The importer's report: another family's file is said in one sentence, not as a list of every
// name (a Transformer-XL config given XLNet's weights printed 74 lines); other problems are
// listed, the first 30 of them.
#include "xl/models/hf_tensor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "test_util.h"
#include "xl/util/error.h"

namespace xl::models {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Imports `file`'s tensors into 40 parameters of 2 values named w0..w39.
std::string import_error(const std::map<std::string, torch::Tensor>& file) {
  test::TempDir dir;
  io::save_safetensors(dir / "w.safetensors", file);
  const auto weights = io::SafeTensors::load(dir / "w.safetensors");
  std::vector<HFTensor> tensors;
  for (int i = 0; i < 40; ++i) {
    add_hf_tensor(tensors, "w" + std::to_string(i), torch::zeros({2}));
  }
  return test::user_error([&] {
    HFImporter importer(weights, "Transformer-XL");
    importer.take(tensors);
    importer.finish();
  });
}

TEST(HFImporter, AnotherFamilysFileIsSaidOnceAndOtherProblemsListedInPart) {
  std::map<std::string, torch::Tensor> other;
  for (int i = 0; i < 30; ++i) {
    other["transformer.layer." + std::to_string(i)] = torch::zeros({2});
  }
  const std::string family = import_error(other);
  EXPECT_THAT(
      family,
      HasSubstr("the file holds none of its 40 tensors, but 30 others (transformer.layer.0, "
                "transformer.layer.1, transformer.layer.10, ...): another model family's "
                "weights?"));
  EXPECT_THAT(family, Not(HasSubstr("\n")));
  std::map<std::string, torch::Tensor> some{{"w0", torch::zeros({3})}};
  const std::string listed = import_error(some);
  EXPECT_THAT(listed, HasSubstr("(40 problems):\n  w0: shape [3] in the file, [2] in the model"));
  EXPECT_THAT(listed, HasSubstr("w29: missing from the file\n  ... and 10 more"));
}

} // namespace
} // namespace xl::models
