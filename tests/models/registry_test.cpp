#include "xl/models/registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace xl::models {
namespace {

// A schema visitor that lists the family sections only.
struct SectionLister {
  template <class... Args>
  void operator()(const char* /*key*/, Args&&... /*field*/) {}
  template <class Section>
  void family(const char* key, const Section& /*section*/, const std::string&) {
    keys.emplace_back(key);
  }
  std::vector<std::string> keys;
};

// Every model.type the config accepts has exactly one family, under the same name, and each
// family with a section of its own is the section of that name.
TEST(Registry, EveryModelTypeHasOneFamilyOfItsName) {
  std::set<std::string> names;
  for (const auto& type : config::model_types()) {
    EXPECT_EQ(model_family(type).name, type);
    names.insert(type);
  }
  EXPECT_EQ(names.size(), model_families().size());
  // The schema's family sections, in order, are the first names model.type accepts.
  SectionLister sections;
  config::ModelConfig model;
  config::ModelConfig::fields(model, sections);
  const auto types = config::model_types();
  ASSERT_GE(types.size(), sections.keys.size());
  EXPECT_EQ(
      std::vector<std::string>(
          types.begin(),
          types.begin() + static_cast<std::ptrdiff_t>(sections.keys.size())),
      sections.keys);
}

// What every caller relies on is there; what may be missing says why in words.
TEST(Registry, DescriptorsAreComplete) {
  for (const ModelFamily& f : model_families()) {
    SCOPED_TRACE(f.name);
    EXPECT_NE(f.build, nullptr);
    EXPECT_NE(f.eval_span, nullptr);
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
  for (const ModelFamily& f : model_families()) {
    config::Config c;
    c.model.type = f.name;
    c.model.n_layer = 1;
    c.model.d_model = 8;
    c.model.n_head = 2;
    c.model.d_head = 4;
    c.model.d_inner = 16;
    c.model.char_transformer.n_ctx = c.train.tgt_len;
    const auto model = f.build(c, 40);
    for (const ModelFamily& other : model_families()) {
      if (other.hf_tensors == nullptr) {
        continue;
      }
      SCOPED_TRACE(f.name + " asked of " + other.name);
      EXPECT_EQ(other.hf_tensors(*model).has_value(), other.name == f.name);
    }
  }
}

} // namespace
} // namespace xl::models
