#include "xl/models/registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "families/test_families.h"
#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/factory.h"
#include "xl/models/layer_stack.h"

namespace xl::models {
namespace {

// Every model.type the config accepts has exactly one family, under the same name, and the
// config layer knows each family's section and rules as that family hands them over.
TEST(Registry, EveryModelTypeHasOneFamilyOfItsName) {
  std::set<std::string> names;
  for (const auto& type : config::model_types()) {
    EXPECT_EQ(model_family(type).name, type);
    names.insert(type);
  }
  EXPECT_EQ(names.size(), model_families().size());
  for (const ModelFamily& f : model_families()) {
    SCOPED_TRACE(f.name);
    const config::FamilySchema* schema = config::family_schema(f.name);
    ASSERT_NE(schema, nullptr);
    EXPECT_EQ(schema->name, f.name);
    EXPECT_EQ(schema->section, f.config.section);
    EXPECT_EQ(schema->validate, f.config.validate);
    EXPECT_EQ(schema->labelled, f.config.labelled);
  }
}

// train.cuda_graphs through the factory: on the CPU nothing is graphed, and asking for graphs
// there says so; on a GPU (the CUDA build's run) the default graphs Transformer-XL, and a family
// or setting that cannot says why in its line.
TEST(Registry, CudaGraphsFollowTheKeyAndSayWhyNot) {
  const auto line =
      [](const std::string& tiny, std::vector<std::string> sets, const torch::Device& device) {
        sets.emplace_back("train.threads=1");
        const auto c = config::load(std::string(test::kSourceDir) + "/" + tiny, sets);
        auto model = build_model(c, 3000);
        const auto said = use_cuda_graphs(*model, c, device);
        return std::make_pair(said, uses_graphs(*model));
      };
  const std::string txl = "configs/transformer_xl/tiny.yaml";
  EXPECT_EQ(line(txl, {}, torch::kCPU), std::make_pair(std::string(), false));
  EXPECT_EQ(
      line(txl, {"train.cuda_graphs=false"}, torch::kCPU), std::make_pair(std::string(), false));
  const auto [asked, graphed] = line(txl, {"train.cuda_graphs=true"}, torch::kCPU);
  EXPECT_EQ(asked, "train.cuda_graphs is true, but the device is the CPU: the layers run eagerly");
  EXPECT_FALSE(graphed);
  if (!torch::cuda::is_available()) {
    return;
  }
  const std::string on =
      "train.cuda_graphs: the layer stack runs as a CUDA graph from its first call whose shapes "
      "repeat (a full memory, or none kept)";
  EXPECT_EQ(line(txl, {}, torch::kCUDA), std::make_pair(on, true));
  EXPECT_EQ(
      line(txl, {"train.cuda_graphs=false"}, torch::kCUDA), std::make_pair(std::string(), false));
  EXPECT_EQ(line("configs/xlnet/tiny.yaml", {}, torch::kCUDA), std::make_pair(on, true));
  const auto [cls, cls_graphed] = line("configs/xlnet/tiny_cls.yaml", {}, torch::kCUDA);
  EXPECT_NE(cls.find("train.cuda_graphs: xlnet runs eagerly"), std::string::npos) << cls;
  EXPECT_NE(cls.find("longest review"), std::string::npos) << cls;
  EXPECT_FALSE(cls_graphed);
  const auto [recompute, recompute_graphed] =
      line(txl, {"train.activation_checkpointing=true"}, torch::kCUDA);
  EXPECT_NE(recompute.find("activation checkpointing"), std::string::npos) << recompute;
  EXPECT_FALSE(recompute_graphed);
}

// A family with a section of its own finds it in a full config's YAML under its name.
TEST(Registry, SectionsAreInTheDumpedConfig) {
  int sections = 0;
  for (const ModelFamily& f : model_families()) {
    SCOPED_TRACE(f.name);
    ASSERT_NE(config::family_schema(f.name), nullptr);
    if (config::family_schema(f.name)->section == nullptr) {
      continue;
    }
    ++sections;
    config::Config c;
    c.model.type = f.name;
    EXPECT_NE(config::dump(c).find("\n  " + f.name + ":\n"), std::string::npos);
  }
  EXPECT_GE(sections, 3); // Transformer-XL's, XLNet's and the character transformer's
}

// The families every program has (registered before main(); a test registers its own later).
const size_t kBuiltinFamilies = model_families().size();

// The tests that go over every family take its tiny configs (test::tiny_configs): each
// family, built-in or a test's, has one, and each names a family.
TEST(Registry, EveryFamilyHasATinyConfig) {
  test::register_test_families();
  ASSERT_GT(model_families().size(), kBuiltinFamilies);
  std::set<std::string> covered;
  for (const std::string& name : test::tiny_configs()) {
    SCOPED_TRACE(name);
    const auto family = config::load(std::string(test::kSourceDir) + "/" + name).model.type.name;
    covered.insert(family);
    // The folder is named as the family: configs/transformer_xl/, configs/xlnet/, ...
    EXPECT_EQ(std::filesystem::path(name).parent_path().filename().string(), family);
  }
  ASSERT_GE(kBuiltinFamilies, 3U);
  for (const ModelFamily& f : model_families()) {
    EXPECT_EQ(covered.count(f.name), 1U)
        << "model family " << f.name << " has no configs/<family>/tiny.yaml";
  }
}

// What every caller relies on is there; what may be missing says why in words.
TEST(Registry, DescriptorsAreComplete) {
  test::register_test_families();
  for (const ModelFamily& f : model_families()) {
    SCOPED_TRACE(f.name);
    EXPECT_NE(f.build, nullptr);
    EXPECT_TRUE(f.eval_span != nullptr || !f.config.carries_memory);
    EXPECT_NE(f.open_dataset, nullptr);
    EXPECT_NE(f.random_dataset, nullptr);
    EXPECT_NE(f.memory_shape, nullptr);
    EXPECT_EQ(f.training_flops == nullptr, f.evaluation_flops == nullptr);
    EXPECT_NE(f.hf_config == nullptr, f.no_hf_model.empty());
    EXPECT_EQ(f.hf_tensors == nullptr, f.import_hf == nullptr);
    EXPECT_EQ(f.hf_config == nullptr, f.hf_tensors == nullptr);
  }
}

// Each family's hf_tensors takes its own models only, so that models::hf_tensors finds the
// family of a model by asking each in turn.
TEST(Registry, HuggingFaceNamesClaimOnlyTheirOwnModels) {
  test::register_test_families();
  for (const auto& tiny : test::tiny_configs()) {
    const auto c = config::load(std::string(test::kSourceDir) + "/" + tiny);
    const ModelFamily& f = model_family(c);
    const auto model = f.build(c, 3000); // above every tiny config's cutoffs
    for (const ModelFamily& other : model_families()) {
      if (other.hf_tensors == nullptr) {
        continue;
      }
      SCOPED_TRACE(tiny + " asked of " + other.name);
      EXPECT_EQ(other.hf_tensors(*model).has_value(), other.name == f.name);
    }
  }
}

} // namespace
} // namespace xl::models
