// Sweeps: grid axes and variants parsed, expanded into named runs in order, every config
// validated before any run starts.
#include "xl/lab/sweep.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

#include "test_util.h"
#include "xl/config/config.h"
#include "xl/models/transformer_xl/config.h"
#include "xl/run/run_dir.h"
#include "xl/util/files.h"

namespace xl::lab {
namespace {

using test::user_error;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SweepSpec, GridAxesKeepBracketedValuesAndVariantsTheirOverrides) {
  const auto lr = parse_grid_axis("train.lr=0.001,0.00025");
  EXPECT_EQ(lr.key, "train.lr");
  EXPECT_THAT(lr.values, ElementsAre("0.001", "0.00025"));
  EXPECT_THAT(
      parse_grid_axis("model.transformer_xl.cutoffs=[10,20],[20,30]").values,
      ElementsAre("[10,20]", "[20,30]"));
  EXPECT_THROW(parse_grid_axis("train.lr"), UserError);
  EXPECT_THROW(parse_grid_axis("=1,2"), UserError);
  EXPECT_THROW(parse_grid_axis("train.lr=1,,2"), UserError);

  const auto v = parse_variant("  no_memory  model.transformer_xl.mem_len=0 ");
  EXPECT_EQ(v.name, "no_memory");
  EXPECT_THAT(v.overrides, ElementsAre("model.transformer_xl.mem_len=0"));
  EXPECT_TRUE(parse_variant("full").overrides.empty());
  EXPECT_THROW(parse_variant(""), UserError);
  EXPECT_THROW(parse_variant("a/b x=1"), UserError);
  EXPECT_THROW(parse_variant("x=1"), UserError);
  EXPECT_THROW(parse_variant("name model.d_model"), UserError);
}

SweepSpec tiny_sweep() {
  SweepSpec spec;
  spec.config = std::string(test::kSourceDir) + "/configs/transformer_xl/tiny.yaml";
  spec.common = {"train.max_step=12"};
  spec.dir = "sweeps/a";
  return spec;
}

TEST(SweepSpec, VariantsTimesTheGridLastAxisFastestEachConfigResolved) {
  auto spec = tiny_sweep();
  spec.variants = {parse_variant("full"), parse_variant("short model.transformer_xl.mem_len=4")};
  spec.grid = {
      parse_grid_axis("train.lr=0.002,0.001"),
      parse_grid_axis("model.transformer_xl.cutoffs=[200,2000],[100,1000]")};
  const auto runs = expand_sweep(spec);
  std::vector<std::string> names;
  for (const auto& r : runs) {
    names.push_back(r.name);
  }
  EXPECT_THAT(
      names,
      ElementsAre(
          "full,lr=0.002,cutoffs=200-2000",
          "full,lr=0.002,cutoffs=100-1000",
          "full,lr=0.001,cutoffs=200-2000",
          "full,lr=0.001,cutoffs=100-1000",
          "short,lr=0.002,cutoffs=200-2000",
          "short,lr=0.002,cutoffs=100-1000",
          "short,lr=0.001,cutoffs=200-2000",
          "short,lr=0.001,cutoffs=100-1000"));
  const auto& last = runs.back().config;
  EXPECT_EQ(last.train.max_step, 12);
  EXPECT_DOUBLE_EQ(last.train.lr, 0.001);
  EXPECT_EQ(last.model.section<models::TransformerXLConfig>().mem_len, 4);
  EXPECT_EQ(
      last.model.section<models::TransformerXLConfig>().cutoffs, (std::vector<int64_t>{100, 1000}));
  EXPECT_EQ(
      run::directory_of(last), std::filesystem::path("sweeps/a/short,lr=0.001,cutoffs=100-1000"));
  EXPECT_EQ(runs[0].config.model.section<models::TransformerXLConfig>().mem_len, 16);
}

TEST(SweepSpec, BadSweepsFailBeforeAnyRun) {
  auto spec = tiny_sweep();
  EXPECT_THROW(expand_sweep(spec), UserError); // nothing to sweep
  spec.variants = {parse_variant("a"), parse_variant("a train.lr=0.1")};
  EXPECT_THROW(expand_sweep(spec), UserError); // one name twice
  // A variant's or an axis's bad value is named by its flag, not as a --set.
  spec.variants = {parse_variant("a"), parse_variant("b train.lrr=0.1")};
  EXPECT_THAT(
      test::user_error([&] { expand_sweep(spec); }),
      HasSubstr("--variant 'b': train.lrr=0.1: unknown key 'train.lrr'"));
  spec.variants.clear();
  spec.grid = {parse_grid_axis("train.lr=0.1,abc")};
  EXPECT_THAT(
      test::user_error([&] { expand_sweep(spec); }),
      HasSubstr("--grid train.lr=abc: train.lr: expected a number > 0, found 'abc'"));
  spec.grid.clear();
  // A key on two axes, or on an axis and in a variant: the later silently won.
  spec.variants = {parse_variant("a train.lr=0.1")};
  spec.grid = {parse_grid_axis("train.warmup_step=0,1")};
  EXPECT_NO_THROW(expand_sweep(spec));
  spec.grid = {parse_grid_axis("train.lr=0.1,0.2")};
  EXPECT_THAT(
      test::user_error([&] { expand_sweep(spec); }),
      HasSubstr("--grid train.lr and --variant 'a' both set train.lr: keep it in one of them"));
  spec.variants.clear();
  spec.grid.push_back(parse_grid_axis("train.lr=0.3"));
  EXPECT_THAT(
      test::user_error([&] { expand_sweep(spec); }),
      HasSubstr("--grid train.lr: given twice; list all its values in one --grid"));
}

// The same property through a sweep's variant names: every accepted name is a plain name
// other than the sweep's own files, and every refused one is a one-line UserError.
TEST(Outputs, SweepVariantNamesArePlainAndNotTheSweepsFiles) {
  const std::vector<std::string> pieces{
      "a", ".", "..", "_", "-", "+", "x1", kSweepTable, kSweepCurves, "/", "="};
  std::mt19937 rng(11);
  for (int i = 0; i < 5000; ++i) {
    std::string name;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < n; ++k) {
      name += pieces[rng() % pieces.size()];
    }
    try {
      const auto variant = parse_variant(name + " train.lr=0.001");
      EXPECT_TRUE(plain_name_problem(variant.name).empty()) << name;
      EXPECT_NE(variant.name, kSweepTable);
      EXPECT_NE(variant.name, kSweepCurves);
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
  for (const std::string bad : {".", "..", kSweepTable, kSweepCurves}) {
    EXPECT_THROW(parse_variant(bad + " train.lr=0.001"), UserError) << bad;
  }
  for (const std::string location : {"run.dir=/tmp/x", "run.name=x"}) {
    EXPECT_THAT(
        user_error([&] { parse_variant("v " + location); }), HasSubstr("is set by the sweep"));
    EXPECT_THAT(user_error([&] { parse_grid_axis(location); }), HasSubstr("is set by the sweep"));
  }
}

} // namespace
} // namespace xl::lab
