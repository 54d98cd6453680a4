#include "xl/io/safetensors.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "xl/models/transformer_xl/hf.h"
#include "xl/util/error.h"

namespace xl::io {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

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
      HasSubstr("not a valid safetensors file: metadata 'format' is [1], expected text"));
  // Headers that are no JSON object: each one line, none of nlohmann's text.
  for (const auto& [header, said] : std::vector<std::pair<std::string, std::string>>{
           {"{not json", "its header of 9 bytes is not JSON"},
           {"[1, 2]", "its header is a JSON array, expected an object of tensors by name"},
           {"{\"\xff\": 1}", "its header is not UTF-8 text (byte 0xFF at 10)"},
           {R"({"a": 3})", "tensor 'a' needs an object with a dtype (text), a shape and"},
           {R"({"a": {"dtype": "F32", "shape": "x", "data_offsets": [0, 4]}})", "tensor 'a'"},
           {"", "its header is empty (a length of 0)"}}) {
    const auto error = load_error(header);
    EXPECT_THAT(error, HasSubstr(said)) << header;
    EXPECT_THAT(error, Not(HasSubstr("json.exception"))) << header;
  }
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
  // Entries that would read each other's bytes, or a name given twice (JSON keeps the last).
  const auto entry = [](const std::string& name, int begin, int end) {
    return fmt::format(
        R"("{}":{{"dtype":"F32","shape":[{}],"data_offsets":[{},{}]}})",
        name,
        (end - begin) / 4,
        begin,
        end);
  };
  for (const auto& [entries, said] : std::vector<std::pair<std::string, std::string>>{
           {entry("a", 0, 8) + "," + entry("b", 4, 12),
            "tensors 'a' and 'b' share the bytes [4, 8)"},
           {entry("a", 0, 16) + "," + entry("b", 4, 8) + "," + entry("c", 12, 16),
            "tensors 'a' and 'b' share the bytes [4, 8)"},
           {entry("a", 0, 4) + "," + entry("a", 4, 8), "its header names tensor 'a' twice"},
           {entry("a", 0, 8) + "," + entry("b", 8, 16), "loaded"}}) {
    EXPECT_THAT(load_error("{" + entries + "}"), HasSubstr(said)) << entries;
  }
}

// A Transformer-XL of one layer, vocabulary 30 in two clusters.
models::TransformerXLOptions one_layer_options() {
  return models::TransformerXLOptions(
      {1, nn::DecoderLayerOptions(nn::AttentionOptions(8, 2, 4), 16)},
      nn::AdaptiveSoftmaxOptions(nn::AdaptiveOptions(30, 8, 8).cutoffs({10}))
          .tie_projs({false, true}));
}

TEST(HFImport, ListsMissingUnexpectedAndMisshapenTensors) {
  test::TempDir dir;
  models::TransformerXLImpl model(one_layer_options());
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

// Weights that are not finite, or not floating-point, would be copied into the model without a
// word (and evaluated to a perplexity of NaN): each is named.
TEST(HFImport, RefusesWeightsThatAreNotFiniteOrNotFloatingPoint) {
  test::TempDir dir;
  models::TransformerXLImpl model(one_layer_options());
  auto nan = torch::zeros({2, 4});
  nan[1][2] = std::numeric_limits<float>::quiet_NaN();
  nan[0][0] = std::numeric_limits<float>::infinity();
  save_safetensors(
      dir / "w.safetensors",
      {{"transformer.r_w_bias", nan},
       {"transformer.r_r_bias", torch::ones({2, 4}, torch::kInt64)},
       {"transformer.word_emb.emb_layers.0.weight", torch::ones({30, 8}, torch::kBool)}});
  try {
    models::import_hf_transfo_xl(model, SafeTensors::load(dir / "w.safetensors"));
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("transformer.r_w_bias: 2 of its 8 values are NaN or infinite"));
    EXPECT_THAT(
        e.what(),
        HasSubstr("transformer.r_r_bias: holds Long values, where a weight is floating-point"));
    EXPECT_THAT(
        e.what(),
        HasSubstr("transformer.word_emb.emb_layers.0.weight: holds Bool values, where a weight "
                  "is floating-point"));
  }
}

} // namespace
} // namespace xl::io
