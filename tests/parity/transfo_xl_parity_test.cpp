// Parity with Hugging Face's TransfoXLLMHeadModel: the same weights and inputs
// through both, three consecutive segments with memory; per-token log-probs and
// the new memories must agree to 1e-5 in float32. The reference side is
// scripts/parity/transfo_xl.py.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/io/safetensors.h"
#include "xl/models/factory.h"
#include "xl/models/hf_import.h"

namespace xl::test {
namespace {

class TransfoXLParity : public ::testing::TestWithParam<std::string> {};

TEST_P(TransfoXLParity, LogProbsAndMemoriesMatchHuggingFace) {
  TempDir dir;
  const std::string source =
      std::string(kSourceDir) + "/tests/parity/" + GetParam() + ".yaml";
  const auto config = config::load(source);
  write_file(dir / "resolved.yaml", config::dump(config));
  const auto reference = run_command(
      std::string(kPython) + " " + kSourceDir +
          "/scripts/parity/transfo_xl.py --config resolved.yaml --out ref --seed 7",
      dir.path());
  ASSERT_EQ(reference.status, 0) << reference.output;

  const auto meta = nlohmann::json::parse(read_text(dir / "ref/meta.json"));
  const int64_t n_token = meta["n_token"];
  const int64_t segments = meta["segments"];
  const int64_t tgt_len = meta["tgt_len"];
  auto model = std::make_shared<models::TransformerXLImpl>(
      models::transformer_xl_options(config.model, n_token));
  models::import_hf_transfo_xl(
      *model, io::SafeTensors::load(dir / "ref/weights.safetensors"));
  model->eval();
  torch::NoGradGuard no_grad;
  if (model->crit->cluster_weight.defined()) {
    // Weights in kimiyoung's cluster order come in reversed.
    auto reversed = std::make_shared<models::TransformerXLImpl>(
        models::transformer_xl_options(config.model, n_token));
    models::HFImportOptions kimiyoung;
    kimiyoung.reverse_clusters = true;
    models::import_hf_transfo_xl(
        *reversed,
        io::SafeTensors::load(dir / "ref/weights.safetensors"),
        kimiyoung);
    EXPECT_TRUE(torch::equal(
        reversed->crit->cluster_weight, model->crit->cluster_weight.flip(0)));
    EXPECT_TRUE(torch::equal(
        reversed->crit->cluster_bias, model->crit->cluster_bias.flip(0)));
  }

  const auto data = io::SafeTensors::load(dir / "ref/data.safetensors");
  const auto input = data.at("input");
  const auto target = data.at("target");
  nn::Memory mems;
  for (int64_t s = 0; s < segments; ++s) {
    SCOPED_TRACE("segment " + std::to_string(s));
    const auto out = model->forward(
        input.narrow(0, s * tgt_len, tgt_len),
        target.narrow(0, s * tgt_len, tgt_len),
        mems,
        true);
    const auto& expected = data.at("logp_" + std::to_string(s));
    EXPECT_TRUE(torch::allclose(out.log_probs, expected, 0.0, 1e-5))
        << "max |diff| "
        << (out.log_probs - expected).abs().max().item<double>();
    ASSERT_EQ(static_cast<int64_t>(out.mems.size()), config.model.n_layer);
    for (size_t l = 0; l < out.mems.size(); ++l) {
      const auto& m =
          data.at("mem_" + std::to_string(s) + "_" + std::to_string(l));
      ASSERT_EQ(out.mems[l].sizes(), m.sizes()) << "layer " << l;
      EXPECT_TRUE(torch::allclose(out.mems[l], m, 0.0, 1e-5))
          << "layer " << l << " max |diff| "
          << (out.mems[l] - m).abs().max().item<double>();
    }
    mems = out.mems;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Configs,
    TransfoXLParity,
    ::testing::Values("txl_div_val", "txl_untied", "txl_full_softmax"));

} // namespace
} // namespace xl::test
