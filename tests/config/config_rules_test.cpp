// The config's rules across keys and families: run names, classes, spans, windows and position
// tables; a family's section only where the family is active.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config_test_util.h"
#include "test_util.h"
#include "xl/config/config.h"
#include "xl/config/visitors.h"
#include "xl/models/char_transformer/config.h"
#include "xl/models/transformer_xl/config.h"
#include "xl/models/xlnet/config.h"
#include "xl/util/error.h"

namespace xl::config {

namespace {

using test::TempDir;
using test::write_file;
using ::testing::HasSubstr;
using ::testing::Not;

// run.name is a folder name under runs/ (run.dir names any folder); a classifier has 2 classes
// or more.
TEST(ConfigErrors, RunNamesArePlainAndAClassifierHasTwoClasses) {
  TempDir dir;
  const auto path = write_config(dir, "");
  for (const std::string name : {"..", ".", "a/b", "x/../.."}) {
    EXPECT_THAT(error_of(path, {"run.name=" + name}), HasSubstr("run.name: expected a plain name"))
        << name;
  }
  EXPECT_EQ(error_of(path, {"run.name=a.b-c_d+e"}), "");
  EXPECT_THAT(error_of(path, {"run.dir=''"}), HasSubstr("run.dir: expected a folder"));
  EXPECT_THAT(
      error_of(path, {"model.type=xlnet", "model.xlnet.n_class=1"}),
      HasSubstr("model.xlnet.n_class: a classifier needs 2 classes or more"));
  // XLNet reads records of train.tgt_len; an eval.tgt_len it would ignore is refused.
  EXPECT_THAT(
      error_of(path, {"model.type=xlnet", "train.tgt_len=32", "eval.tgt_len=64"}),
      HasSubstr("eval.tgt_len: XLNet evaluates records (or reviews) of train.tgt_len = 32"));
  EXPECT_EQ(error_of(path, {"model.type=xlnet", "train.tgt_len=32", "eval.tgt_len=32"}), "");
}

TEST(ConfigErrors, SameLengthNeedsAMemory) {
  TempDir dir;
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  transformer_xl:\n    same_length: true\n")),
      HasSubstr("model.transformer_xl.same_length: needs model.transformer_xl.mem_len > 0"));
  const std::string with_memory =
      "model:\n  transformer_xl:\n    same_length: true\n    mem_len: 8\n";
  const auto path = write_config(dir, with_memory);
  EXPECT_EQ(error_of(path), "");
  // The evaluation's memory, not only the model's: no query may be left without keys.
  EXPECT_THAT(
      error_of(path, {"eval.mem_len=0"}),
      HasSubstr("eval.mem_len: the evaluation memory is 0 and same_length is on"));
  EXPECT_EQ(error_of(path, {"eval.mem_len=0", "eval.same_length=false"}), "");
  EXPECT_EQ(error_of(path, {"eval.mem_len=0", "eval.mode=vanilla"}), "");
  EXPECT_THAT(
      error_of(path, {"eval.tgt_len=78"}), // 8 + 70 - 78 = 0 during validation
      HasSubstr("eval.tgt_len: validation during training keeps the training attention span"));
}

TEST(ConfigErrors, VanillaStrideFitsTheWindow) {
  TempDir dir;
  const auto path = write_config(dir, "train:\n  tgt_len: 16\n");
  EXPECT_THAT(
      error_of(path, {"eval.mode=vanilla", "eval.stride=17"}),
      HasSubstr("eval.stride: the vanilla windows are train.tgt_len = 16 tokens"));
  EXPECT_EQ(error_of(path, {"eval.mode=vanilla", "eval.stride=16"}), "");
}

TEST(ConfigErrors, CharTransformerTargetsFitTheWindow) {
  TempDir dir;
  const auto path = write_config(
      dir,
      "model:\n  type: char_transformer\n  char_transformer:\n    n_ctx: 8\n"
      "train:\n  tgt_len: 3\neval:\n  mode: vanilla\n");
  EXPECT_EQ(error_of(path, {"model.char_transformer.target_weights=[1, 0.5, 0.25]"}), "");
  EXPECT_THAT(
      error_of(path, {"model.char_transformer.target_weights=[1, 0.5, 0.25, 0.1]"}),
      HasSubstr("model.char_transformer.target_weights: 4 weights, but a window of "
                "train.tgt_len = 3 has targets up to t+3"));
}

TEST(ConfigErrors, LearnedPositionTablesCoverEverySpan) {
  TempDir dir;
  const auto path = write_config(
      dir,
      "model:\n  transformer_xl:\n    attn_type: learned\n    mem_len: 30\n"
      "train:\n  tgt_len: 20\n");
  EXPECT_EQ(error_of(path), ""); // n_ctx null: 30 + 20
  EXPECT_THAT(
      error_of(path, {"model.transformer_xl.n_ctx=49"}),
      HasSubstr("model.transformer_xl.n_ctx: the position tables have 49 rows, but "
                "training reads mem_len + train.tgt_len = 30 + 20 = 50 positions"));
  EXPECT_THAT(
      error_of(path, {"eval.mem_len=40"}),
      HasSubstr("eval.mem_len: the evaluation reads eval.mem_len + eval.tgt_len = 60 "
                "positions, more than the 50 rows"));
  EXPECT_EQ(error_of(path, {"eval.mem_len=40", "model.transformer_xl.n_ctx=60"}), "");
  EXPECT_THAT(
      error_of(path, {"model.transformer_xl.attn_type=relative", "model.transformer_xl.n_ctx=60"}),
      HasSubstr("only attn_type learned has"));
}

TEST(FamilySections, AFamilysKeyAtTheTopLevelPointsToItsSection) {
  TempDir dir;
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  mem_len: 4\n")),
      HasSubstr("config.yaml:4: unknown key 'model.mem_len': it belongs to the family section: "
                "write model.transformer_xl.mem_len"));
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  transformer_xl:\n    mem_lenn: 4\n")),
      HasSubstr("unknown key 'model.transformer_xl.mem_lenn' (did you mean "
                "'model.transformer_xl.mem_len'?)"));
}

TEST(FamilySections, OnlyTheActiveFamilyMaySetItsSection) {
  TempDir dir;
  const Config xlnet = load(write_config(dir, "model:\n  type: xlnet\n  xlnet:\n    n_class: 3\n"));
  EXPECT_EQ(xlnet.model.section<models::XLNetConfig>().n_class, 3);
  EXPECT_THAT(
      error_of(write_config(dir, "model:\n  type: transformer_xl\n  xlnet:\n    n_class: 3\n")),
      HasSubstr("config.yaml:5: model.xlnet: these keys are for model.type xlnet, but "
                "model.type is transformer_xl"));
  // The dump holds the active family's section only, after the common keys.
  const std::string text = dump(xlnet);
  EXPECT_THAT(text, HasSubstr("  layer_norm_eps: 1.0e-05\n  xlnet:\n    untie_r: false\n"));
  EXPECT_THAT(text, Not(HasSubstr("transformer_xl:")));
  EXPECT_THAT(text, Not(HasSubstr("char_transformer:")));
  EXPECT_EQ(
      load(write_file(dir / "dumped.yaml", text)).model.section<models::XLNetConfig>().n_class, 3);
}

// A section's struct read for another family is that family's defaults; set, it becomes the
// config's section.
TEST(FamilySections, SectionsReadAsTheirDefaultsUntilSet) {
  Config c;
  c.model.type = "char_transformer";
  EXPECT_EQ(c.model.section<models::CharTransformerConfig>().n_ctx, 512);
  c.model.section<models::CharTransformerConfig>().n_ctx = 64;
  EXPECT_EQ(c.model.section<models::CharTransformerConfig>().n_ctx, 64);
  EXPECT_THAT(dump(c), HasSubstr("  char_transformer:\n    n_ctx: 64\n"));
  const Config copy = c;
  c.model.section<models::CharTransformerConfig>().n_ctx = 32;
  EXPECT_EQ(copy.model.section<models::CharTransformerConfig>().n_ctx, 64);
  // Setting another family's section replaces this one.
  c.model.section<models::XLNetConfig>().n_class = 2;
  EXPECT_EQ(c.model.section<models::CharTransformerConfig>().n_ctx, 512);
}

// Labelled examples are read by XLNet classification only: elsewhere their keys are errors that
// say who reads them.
TEST(FamilySections, LabelledKeysNeedAFamilyThatReadsLabels) {
  TempDir dir;
  const std::string path = write_config(dir, "");
  EXPECT_THAT(
      error_of(path, {"data.train_examples=5"}),
      HasSubstr("data.train_examples: limits labelled examples, which only model.type xlnet "
                "with model.xlnet.n_class > 0 reads: set null"));
  EXPECT_THAT(
      error_of(path, {"model.type=xlnet", "train.group_by_length=true"}),
      HasSubstr("train.group_by_length: groups labelled examples"));
  EXPECT_EQ(
      error_of(
          path,
          {"model.type=xlnet",
           "model.xlnet.n_class=2",
           "data.train_examples=5",
           "train.group_by_length=true"}),
      "");
}

} // namespace
} // namespace xl::config
