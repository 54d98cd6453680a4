#include "xl/io/safetensors.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "test_util.h"
#include "xl/models/transformer_xl/hf.h"
#include "xl/util/error.h"

namespace xl::io {
namespace {

using ::testing::HasSubstr;

TEST(SafeTensors, RoundTripsDtypesShapesAndMetadata) {
  test::TempDir dir;
  const std::map<std::string, torch::Tensor> tensors{
      {"a", torch::randn({2, 3})},
      {"b", torch::arange(5, torch::kLong)},
      {"c", torch::randn({4}).to(torch::kBFloat16)},
      {"scalar", torch::tensor(3.5)}};
  save_safetensors(dir / "t.safetensors", tensors, {{"format", "pt"}});
  const auto loaded = SafeTensors::load(dir / "t.safetensors");
  EXPECT_EQ(loaded.names().size(), 4u);
  for (const auto& [name, t] : tensors) {
    EXPECT_TRUE(torch::equal(loaded.at(name), t)) << name;
    EXPECT_EQ(loaded.at(name).scalar_type(), t.scalar_type()) << name;
  }
  EXPECT_EQ(loaded.metadata().at("format"), "pt");
  EXPECT_THROW(loaded.at("missing"), UserError);
}

TEST(SafeTensors, RefusesTruncatedAndForeignFiles) {
  test::TempDir dir;
  save_safetensors(dir / "t.safetensors", {{"a", torch::randn({64})}});
  const auto path = dir / "t.safetensors";
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 8);
  try {
    SafeTensors::load(path);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor 'a' (F32 64) has byte range"));
  }
  test::write_file(dir / "junk", "\xff\xff\xff\xff\xff\xff\xff\x7f{}");
  EXPECT_THROW(SafeTensors::load(dir / "junk"), UserError);
}

// Headers the fuzzer made: metadata that is not text, and shapes far larger than the file or
// negative, refused before any tensor is allocated.
TEST(SafeTensors, RefusesMalformedHeadersBeforeAllocating) {
  test::TempDir dir;
  const auto load_error = [&](const std::string& header) {
    std::string bytes(8, '\0');
    for (size_t b = 0; b < 8; ++b) {
      bytes[b] = static_cast<char>((header.size() >> (8 * b)) & 0xff);
    }
    test::write_file(dir / "t.safetensors", bytes + header + std::string(16, '\0'));
    try {
      SafeTensors::load(dir / "t.safetensors");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("loaded");
  };
  EXPECT_THAT(
      load_error(R"({"__metadata__":{"format":[1]}})"),
      HasSubstr("entry '__metadata__': [json.exception.type_error.302]"));
  EXPECT_THAT(
      load_error(R"({"a":{"dtype":"F32","shape":[1000000000,1000000000,1000000000],)"
                 R"("data_offsets":[0,16]}})"),
      HasSubstr("tensor 'a' (F32 1000000000x1000000000x1000000000) has byte range [0, 16)"));
  EXPECT_THAT(
      load_error(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})"),
      HasSubstr("tensor 'a' (F32 -4) has byte range"));
  EXPECT_THAT(
      load_error(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[1.2e53,16]}})"),
      HasSubstr("tensor 'a' needs whole numbers for its shape and byte offsets, found "
                "[2,2] and [1.2e+53,16]"));
  EXPECT_EQ(load_error(R"({"a":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})"), "loaded");
}

TEST(HFImport, ListsMissingUnexpectedAndMisshapenTensors) {
  test::TempDir dir;
  models::TransformerXLImpl model(models::TransformerXLOptions(
      1,
      nn::DecoderLayerOptions(nn::AttentionOptions(8, 2, 4), 16),
      nn::AdaptiveSoftmaxOptions(nn::AdaptiveOptions(30, 8, 8).cutoffs({10}))
          .tie_projs({false, true})));
  std::map<std::string, torch::Tensor> weights{
      {"transformer.word_emb.emb_layers.0.weight", torch::zeros({30, 8})},
      {"transformer.r_w_bias", torch::zeros({3, 4})},
      {"transformer.bogus", torch::zeros({1})}};
  save_safetensors(dir / "w.safetensors", weights);
  try {
    models::import_hf_transfo_xl(model, SafeTensors::load(dir / "w.safetensors"));
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(
        e.what(), HasSubstr("transformer.r_w_bias: shape [3, 4] in the file, [2, 4] in the model"));
    EXPECT_THAT(e.what(), HasSubstr("transformer.bogus: in the file but not in the model"));
    EXPECT_THAT(e.what(), HasSubstr("transformer.r_r_bias: missing from the file"));
    EXPECT_THAT(e.what(), HasSubstr("crit.cluster_weight: missing from the file"));
  }
}

} // namespace
} // namespace xl::io
